//! What containment adds to an agent's start (G41): spawns `/bin/true` N times (default 200)
//! the way the shim does without a PID namespace (its own process group, parent-death
//! signal, fork+exec) and in one ([`sublaunch_shim::process::namespace::spawn`]), and prints
//! the mean time of the spawn alone (until the program was exec'd) and of spawn + end.
//!
//! `cargo run --example spawn_cost -- 500` (run as root it measures the PID namespace alone;
//! under `setpriv --reuid=… --regid=… --clear-groups` the user and PID namespace).

use rustix::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sublaunch_shim::process::namespace::{self, Message, Prepared};

thread_local! {
    static PREPARE: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

fn main() {
    let n: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let argv = vec!["/bin/true".to_owned()];
    let env: Vec<_> = std::env::vars_os().collect();
    // Warm up both paths (page cache, first namespace of this user).
    grouped();
    contained(&argv, &env);
    let (mut g_spawn, mut g_total, mut c_spawn, mut c_total) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..n {
        let (s, t) = grouped();
        g_spawn += s;
        g_total += t;
        let (s, t) = contained(&argv, &env);
        c_spawn += s;
        c_total += t;
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(n);
    println!("{n} spawns of /bin/true, mean per spawn (µs):");
    println!(
        "  process group : spawn {:>7.1}   spawn+end {:>7.1}",
        us(g_spawn),
        us(g_total)
    );
    println!(
        "  pid namespace : spawn {:>7.1}   spawn+end {:>7.1}",
        us(c_spawn),
        us(c_total)
    );
    println!(
        "  of which building argv and environment: {:>7.1}",
        us(PREPARE.with(std::cell::Cell::get))
    );
    println!(
        "  added         : spawn {:>7.1}   spawn+end {:>7.1}",
        us(c_spawn) - us(g_spawn),
        us(c_total) - us(g_total)
    );
}

/// The process-group path: fork+exec with a `pre_exec` (as `step::spawn` without a namespace).
fn grouped() -> (Duration, Duration) {
    let start = Instant::now();
    let mut cmd = Command::new("/bin/true");
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl only.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn");
    let spawned = start.elapsed();
    child.wait().expect("wait");
    (spawned, start.elapsed())
}

/// The contained path: the namespace, its init, the agent, its end through the status pipe.
fn contained(argv: &[String], env: &[(std::ffi::OsString, std::ffi::OsString)]) -> (Duration, Duration) {
    let start = Instant::now();
    let prepared = Prepared::new(argv, env.to_vec(), "/", None, None).expect("prepare");
    PREPARE.with(|p| p.set(p.get() + start.elapsed()));
    let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe");
    let (_out, out_w) = pipe();
    let (_err, err_w) = pipe();
    let stdio = namespace::Stdio {
        stdin: OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null")),
        stdout: out_w,
        stderr: err_w,
    };
    let contained = namespace::spawn(&prepared, stdio).expect("a PID namespace");
    let spawned = start.elapsed();
    rustix::io::ioctl_fionbio(&contained.status, false).expect("blocking");
    loop {
        match namespace::read_message(&contained.status) {
            Some(Message::Exited(_) | Message::Signaled(_)) | None => break,
            Some(_) => {}
        }
    }
    let init = i32::try_from(contained.init).expect("pid");
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(init, std::ptr::null_mut(), 0) };
    (spawned, start.elapsed())
}
