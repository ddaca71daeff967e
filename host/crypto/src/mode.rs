//! The start-up step: the process-wide rustls provider, installed before anything can make a
//! TLS object (the kube client builds its own from the process default), and in the FIPS build
//! the proof that the module is in FIPS mode and passes its self-tests.

use std::sync::OnceLock;

/// Which cryptography this process runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mode {
    /// AWS-LC's FIPS module in FIPS mode (the FIPS build, checked at start).
    pub fips: bool,
    /// The module and its version, e.g. `AWS-LC FIPS 4.0.0`; `ring` by default.
    pub module: String,
}

static MODE: OnceLock<Mode> = OnceLock::new();

/// Installs the process-wide provider and checks FIPS mode (the FIPS build); the first call
/// decides, later ones return its answer. Call it first thing in `main`: a FIPS build whose
/// module is not in FIPS mode must not start.
pub fn init() -> Result<&'static Mode, String> {
    if let Some(mode) = MODE.get() {
        return Ok(mode);
    }
    let mode = check()?;
    Ok(MODE.get_or_init(|| mode))
}

/// What [`init`] found, once it succeeded.
pub fn mode() -> Option<&'static Mode> {
    MODE.get()
}

#[cfg(not(feature = "fips"))]
fn check() -> Result<Mode, String> {
    // What rustls would install by itself on first use; someone earlier (a test) may have.
    let _ = (*crate::tls::provider()).clone().install_default();
    Ok(Mode {
        fips: false,
        module: "ring".into(),
    })
}

#[cfg(feature = "fips")]
fn check() -> Result<Mode, String> {
    const REFUSED: &str = "refusing to start: this is the FIPS build";
    // Debug builds only: how the tests see the refusal without a broken module.
    if cfg!(debug_assertions) && std::env::var_os("ODH_TEST_FIPS_REFUSE").is_some() {
        return Err(format!(
            "{REFUSED} and the AWS-LC module is not in FIPS mode (ODH_TEST_FIPS_REFUSE)"
        ));
    }
    aws_lc_rs::try_fips_mode()
        .map_err(|e| format!("{REFUSED} and the AWS-LC module is not in FIPS mode: {e}"))?;
    // The module tests each algorithm before its first use; running every known-answer test
    // now makes a failing one stop the start instead of a later handshake. A mismatch aborts
    // the process inside the module (FIPS 140-3 requires it); other failures come back here.
    aws_lc_rs::try_fips_self_test()
        .map_err(|_| format!("{REFUSED} and the AWS-LC module's self-tests failed"))?;
    let provider = crate::tls::provider();
    if !provider.fips() {
        return Err(format!(
            "{REFUSED} and the TLS provider includes an algorithm that is not FIPS-approved"
        ));
    }
    if let Err(installed) = (*provider).clone().install_default()
        && !installed.fips()
    {
        return Err(format!(
            "{REFUSED} and a non-FIPS TLS provider was installed before the check"
        ));
    }
    Ok(Mode {
        fips: true,
        module: format!("AWS-LC FIPS {}", aws_lc_rs::awslc_version()),
    })
}
