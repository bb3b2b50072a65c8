//! The test sshd itself works: a real OpenSSH server on loopback, reached through an alias,
//! with strict host key checking (the remote-placement suites build on it).

use std::process::Command;
use sublaunch_tests::sshd::{Sshd, SshdOptions};

fn ssh(home: &std::path::Path, alias: &str, command: &str) -> std::process::Output {
    Command::new("ssh")
        // ssh reads ~/.ssh/config from the passwd entry's home, not $HOME: name it.
        .arg("-F")
        .arg(home.join(".ssh/config"))
        .args([
            "-T",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            alias,
            command,
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .output()
        .unwrap()
}

#[test]
fn an_alias_reaches_the_loopback_server() {
    let server = Sshd::start();
    let home = tempfile::tempdir().unwrap();
    server.client_home(home.path(), "testbox", true);
    let output = ssh(home.path(), "testbox", "echo remote-ok; pwd");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("remote-ok\n"));
}

#[test]
fn an_unknown_host_key_is_refused() {
    let server = Sshd::start();
    let home = tempfile::tempdir().unwrap();
    server.client_home(home.path(), "testbox", false);
    let output = ssh(home.path(), "testbox", "true");
    assert_eq!(output.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Host key verification failed"));
}

#[test]
fn a_refused_key_fails_authentication() {
    let server = Sshd::start_with(&SshdOptions {
        refuse_key: true,
        ..SshdOptions::default()
    });
    let home = tempfile::tempdir().unwrap();
    server.client_home(home.path(), "testbox", true);
    let output = ssh(home.path(), "testbox", "true");
    assert_eq!(output.status.code(), Some(255));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Permission denied"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
