//! The Herdr machine catalog (placement-and-schemas.md P-H1): the verbatim stdout of
//! `herdr machine list --json`, read only when a request can place something.

use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How long `herdr machine list --json` may take (P-H1), unless
/// `SUBLAUNCH_HERDR_TIMEOUT_MS` says otherwise.
pub const TIMEOUT: Duration = Duration::from_millis(7_500);
/// The most catalog text accepted.
pub const MAX_OUTPUT: usize = 1024 * 1024;
const MAX_STDERR: u64 = 16 * 1024;

/// Runs `herdr machine list --json` with the timeout and the output cap; every failure is
/// an error that says what happened.
pub async fn machine_list(env: &crate::Environment) -> anyhow::Result<String> {
    let bin = env.herdr_bin();
    let shown = format!("`{} machine list --json`", bin.display());
    let mut child = tokio::process::Command::new(&bin)
        .args(["machine", "list", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => anyhow::anyhow!(
                "Herdr CLI not found: {} is not on PATH (install herdr or set HERDR_BIN to its path)",
                bin.display()
            ),
            _ => anyhow::anyhow!("cannot run {shown}: {e}"),
        })?;
    let pgid = child.id().map(|id| id as i32);
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let collect = async {
        let read_out = async {
            let mut out = Vec::new();
            (&mut stdout)
                .take(MAX_OUTPUT as u64 + 1)
                .read_to_end(&mut out)
                .await
                .map(|_| out)
        };
        let read_err = async {
            let mut err = Vec::new();
            let _ = (&mut stderr).take(MAX_STDERR).read_to_end(&mut err).await;
            err
        };
        tokio::pin!(read_out, read_err);
        // Read both pipes at once, but stop at once when stdout passes the cap: herdr may
        // then be blocked writing, and its stderr would never close.
        let (out, err) = tokio::select! {
            out = &mut read_out => (out?, None),
            err = &mut read_err => ((&mut read_out).await?, Some(err)),
        };
        if out.len() > MAX_OUTPUT {
            return Ok::<_, std::io::Error>((out, Vec::new(), None));
        }
        let err = match err {
            Some(err) => err,
            None => read_err.await,
        };
        let status = child.wait().await?;
        Ok((out, err, Some(status)))
    };
    let limit = env.herdr_timeout(TIMEOUT);
    let outcome = tokio::time::timeout(limit, collect).await;
    let kill_group = || {
        if let Some(pgid) = pgid.and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    };
    let (out, err, status) = match outcome {
        Err(_) => {
            kill_group();
            anyhow::bail!("{shown} did not finish within {:.1} s", limit.as_secs_f64());
        }
        Ok(Err(e)) => {
            kill_group();
            anyhow::bail!("reading the output of {shown}: {e}");
        }
        Ok(Ok(collected)) => collected,
    };
    let Some(status) = status else {
        kill_group();
        anyhow::bail!(
            "{shown} printed more than {} KiB; refusing the catalog",
            MAX_OUTPUT / 1024
        );
    };
    if !status.success() {
        let stderr = String::from_utf8_lossy(&err);
        let why = match status.code() {
            Some(code) => format!("exited with code {code}"),
            None => "was killed by a signal".to_owned(),
        };
        anyhow::bail!("{shown} {why}: {}", stderr.trim());
    }
    String::from_utf8(out).map_err(|_| anyhow::anyhow!("{shown} printed text that is not UTF-8"))
}
