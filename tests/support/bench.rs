//! What the benchmarks in `tests/benches/` share: how many rounds to run, medians, and
//! milliseconds as the tables print them.

use std::time::Duration;

/// The rounds to run: `SUBLAUNCH_BENCH_ROUNDS`, else `default`; `None` when cargo only asks
/// for the list of benchmarks (`--list`), which runs nothing.
pub fn rounds(default: usize) -> Option<usize> {
    if std::env::args().any(|a| a == "--list") {
        return None;
    }
    Some(
        std::env::var("SUBLAUNCH_BENCH_ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(default),
    )
}

/// The median of `samples` (not empty).
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A registry file in `dir` naming the fake provider's model (`run --models FILE` with
/// `--model fake/fake-model`, for the real pi behind the fake model server); its path.
pub fn fake_registry(dir: &std::path::Path) -> String {
    let registry = dir.join("models.json");
    std::fs::write(&registry, r#"[{"provider":"fake","id":"fake-model"}]"#).expect("models.json");
    registry.to_string_lossy().into_owned()
}

/// `12.34 ms`.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
