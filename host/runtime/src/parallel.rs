//! Work on every item at once, one scoped thread each: compiling components is CPU-bound and
//! each compilation parallelises poorly inside, so a start-up or an image build compiles all
//! its plugins side by side.

/// `f` applied to every item on threads of its own, results in the items' order; a panicking
/// call is an error of its own.
pub fn each_in_parallel<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> anyhow::Result<R> + Sync,
) -> Vec<anyhow::Result<R>> {
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items.iter().map(|item| s.spawn(move || f(item))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("compilation panicked")))
            })
            .collect()
    })
}
