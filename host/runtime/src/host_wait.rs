//! Host imports that block. A plugin call runs either on the blocking pool or, for admission,
//! on a fiber on one of the executor's workers ([`crate::LoadedPlugin::admit`]). A host import
//! that waits on the runtime (a read the caches cannot answer, a write, an access review) or
//! computes for long (a key) must not hold a worker: on a worker of a multi-threaded runtime
//! it first hands the worker's queue to another thread (`block_in_place`); elsewhere it simply
//! runs, as it always did.

use std::future::Future;

/// Whether this thread may block in place: tokio allows it only under a multi-threaded
/// runtime (and a thread outside any runtime never needs it). Calls run inline only there.
pub(crate) fn multi_threaded() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Runs `work` on `handle` until it completes, from a plugin call's thread.
pub fn block_on<F: Future>(handle: &tokio::runtime::Handle, work: F) -> F::Output {
    if multi_threaded() {
        tokio::task::block_in_place(|| handle.block_on(work))
    } else {
        handle.block_on(work)
    }
}

/// Runs CPU-heavy host work from a plugin call's thread.
pub fn compute<R>(f: impl FnOnce() -> R) -> R {
    if multi_threaded() {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}
