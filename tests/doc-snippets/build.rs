//! Cuts docs/plugin-authors.md's ```rust blocks into `$OUT_DIR/snippet_<n>.rs` (as written: items)
//! `snippet_<n>_block.rs` (wrapped in braces: statements, as one block expression) and
//! `snippet_<n>_list.rs` (in brackets: list elements, as one array expression), and
//! counts them, so a snippet added to the guide without a context here fails the build.

fn main() {
    let guide = "../../docs/plugin-authors.md";
    println!("cargo:rerun-if-changed={guide}");
    let text = std::fs::read_to_string(guide).expect("read docs/plugin-authors.md");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let mut snippets = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_start() == "```rust" => current = Some(String::new()),
            Some(body) if line.trim_start() == "```" => {
                snippets.push(std::mem::take(body));
                current = None;
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "an unclosed ```rust block in {guide}");
    for (n, body) in snippets.iter().enumerate() {
        std::fs::write(out.join(format!("snippet_{n}.rs")), body).expect("write snippet");
        std::fs::write(
            out.join(format!("snippet_{n}_block.rs")),
            format!("{{\n{body}}}\n"),
        )
        .expect("write snippet");
        std::fs::write(
            out.join(format!("snippet_{n}_list.rs")),
            format!("[\n{body}]\n"),
        )
        .expect("write snippet");
    }
    std::fs::write(
        out.join("count.rs"),
        format!("pub const SNIPPETS: usize = {};\n", snippets.len()),
    )
    .expect("write count");
}
