//! `eventually` and `consistently`, the two ways an integration test waits.

use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, sleep};

/// How long to wait and how often to look.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub timeout: Duration,
    pub interval: Duration,
}

impl Default for Timing {
    /// 30 s (`ODH_TEST_TIMEOUT_SECS` overrides it), polling every 100 ms.
    fn default() -> Self {
        let secs = std::env::var("ODH_TEST_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(30);
        Self {
            timeout: Duration::from_secs(secs),
            interval: Duration::from_millis(100),
        }
    }
}

impl Timing {
    pub fn within(timeout: Duration) -> Self {
        Self {
            timeout,
            ..Self::default()
        }
    }
}

/// Polls `check` until it returns `Ok`, and returns that value; fails with the last error
/// once the timeout passes.
pub async fn eventually<T, F, Fut>(what: &str, timing: Timing, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let deadline = Instant::now() + timing.timeout;
    loop {
        match check().await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() >= deadline => {
                anyhow::bail!("{what}: not true within {:?}; last: {e:#}", timing.timeout)
            }
            Err(_) => sleep(timing.interval).await,
        }
    }
}

/// Checks that `check` returns `Ok` every time it is polled for the whole duration.
pub async fn consistently<F, Fut>(what: &str, timing: Timing, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let deadline = Instant::now() + timing.timeout;
    loop {
        if let Err(e) = check().await {
            anyhow::bail!("{what}: stopped holding: {e:#}");
        }
        if Instant::now() >= deadline {
            return Ok(());
        }
        sleep(timing.interval).await;
    }
}

/// Waits until `name` exists through `api` and returns it.
pub async fn exists<K>(api: &kube::Api<K>, name: &str) -> anyhow::Result<K>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(&format!("{name} exists"), Timing::default(), || async {
        api.get_opt(name)
            .await?
            .ok_or_else(|| anyhow::anyhow!("{name} not found"))
    })
    .await
}

/// Waits until `name` no longer exists through `api`.
pub async fn absent<K>(api: &kube::Api<K>, name: &str) -> anyhow::Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(&format!("{name} is gone"), Timing::default(), || async {
        match api.get_opt(name).await? {
            None => Ok(()),
            Some(_) => anyhow::bail!("{name} still exists"),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn quick(ms: u64) -> Timing {
        Timing {
            timeout: Duration::from_millis(ms),
            interval: Duration::from_millis(5),
        }
    }

    #[tokio::test]
    async fn eventually_returns_once_true() {
        let n = AtomicU32::new(0);
        let v = eventually("counter reaches 3", quick(1000), || async {
            let v = n.fetch_add(1, Ordering::SeqCst) + 1;
            if v >= 3 {
                Ok(v)
            } else {
                anyhow::bail!("at {v}")
            }
        })
        .await
        .unwrap();
        assert_eq!(v, 3);
    }

    #[tokio::test]
    async fn eventually_times_out_with_last_error() {
        let err = eventually::<(), _, _>("never", quick(30), || async { anyhow::bail!("nope") })
            .await
            .unwrap_err();
        assert!(
            format!("{err}").contains("never") && format!("{err}").contains("nope"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn consistently_fails_when_the_condition_breaks() {
        let n = AtomicU32::new(0);
        let err = consistently("stays below 3", quick(1000), || async {
            if n.fetch_add(1, Ordering::SeqCst) < 3 {
                Ok(())
            } else {
                anyhow::bail!("broke")
            }
        })
        .await
        .unwrap_err();
        assert!(format!("{err}").contains("broke"));
        consistently("always", quick(30), || async { Ok(()) })
            .await
            .unwrap();
    }
}
