//! Anonymous in-memory files (`memfd_create`): bytes a child reads on its standard input
//! without a file on disk that another process could read or that a crash would leave
//! behind (an agent's first prompt, the completion hook's job).

use rustix::fd::OwnedFd;
use rustix::fs::{MemfdFlags, SeekFrom};
use std::io;

/// An in-memory file named `name` (what `/proc/<pid>/fd` shows) holding `bytes`, positioned
/// at its start and closed on exec (a child gets it only as one of its standard streams).
pub fn with_bytes(name: &str, bytes: &[u8]) -> io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC)?;
    let mut written = 0;
    while written < bytes.len() {
        match rustix::io::write(&fd, &bytes[written..]) {
            Ok(n) => written += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rustix::fs::seek(&fd, SeekFrom::Start(0))?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    #[test]
    fn the_file_holds_the_bytes_from_its_start() {
        let bytes = vec![b'x'; 200_000];
        let fd = super::with_bytes("sublaunch-test", &bytes).unwrap();
        let mut read = Vec::new();
        std::fs::File::from(fd).read_to_end(&mut read).unwrap();
        assert_eq!(read, bytes);
    }
}
