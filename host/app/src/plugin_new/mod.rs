//! `plugin new`: a ready plugin crate for a vendor, outside this repository. What it writes
//! builds into a component and passes its own tests unchanged (`host/app/tests/plugin_new.rs`
//! builds and evaluates one), so the first fifteen minutes go to the vendor's policy, not to
//! guessing the crate layout, the profile or the manifest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// The toolchain the SDK is built with (the repository's `rust-toolchain.toml`; a unit test
/// keeps them equal).
pub const RUST_VERSION: &str = "1.95.0";
/// Where a vendor takes the SDK from when no local checkout is named.
pub const SDK_GIT: &str = "https://github.com/opendatahub-io/odh-model-controller-rs";

/// Arguments of `plugin new`.
#[derive(Debug, Clone, clap::Args)]
pub struct NewArgs {
    /// The plugin's name (its key in the plugins ConfigMap): 1-63 of [a-z0-9-], starting with a
    /// letter.
    pub name: String,
    /// The directory to write (must not exist or be empty); default `./NAME`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The kind the plugin acts on, as `group/version/Kind` (`v1/Kind` for the core group).
    #[arg(long, default_value = "serving.kserve.io/v1alpha1/ServingRuntime")]
    pub kind: String,
    /// The webhooks to write: `validate`, `mutate`, both (comma-separated) or `none`.
    #[arg(long, default_value = "validate,mutate")]
    pub webhooks: String,
    /// The controller's primary kind (`group/version/Kind`), `none` for no controller; default
    /// the `--kind`.
    #[arg(long)]
    pub controller: Option<String>,
    /// Depend on the SDK of a local checkout (`<checkout>/plugins/sdk`) instead of the release
    /// tag in git.
    #[arg(long, value_name = "DIR")]
    pub sdk_path: Option<PathBuf>,
    /// The git tag of the SDK (the controller release the plugin targets).
    #[arg(long, default_value = concat!("v", env!("CARGO_PKG_VERSION")))]
    pub sdk_tag: String,
}

const TEMPLATES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("template/Cargo.toml.tmpl")),
    (
        "rust-toolchain.toml",
        include_str!("template/rust-toolchain.toml.tmpl"),
    ),
    (".gitignore", include_str!("template/gitignore.tmpl")),
    ("README.md", include_str!("template/README.md.tmpl")),
    ("src/lib.rs", include_str!("template/lib.rs.tmpl")),
    (
        "tests/plugin.rs",
        include_str!("template/plugin_test.rs.tmpl"),
    ),
    (
        "samples/settings.yaml",
        include_str!("template/settings.yaml.tmpl"),
    ),
    (
        "samples/object.yaml",
        include_str!("template/object.yaml.tmpl"),
    ),
    (
        ".cargo/config.toml",
        include_str!("template/cargo-config.toml.tmpl"),
    ),
];

/// Written only with a validating webhook: the object it refuses.
const DENIED_SAMPLE: (&str, &str) = (
    "samples/denied.yaml",
    include_str!("template/denied.yaml.tmpl"),
);

/// What the arguments ask for, checked.
#[derive(Debug)]
struct Shape {
    name: String,
    kind: Kind,
    controller: bool,
    validate: bool,
    mutate: bool,
}

#[derive(Debug)]
struct Kind {
    group: String,
    version: String,
    kind: String,
}

impl Kind {
    fn parse(text: &str) -> anyhow::Result<Kind> {
        let parts: Vec<&str> = text.split('/').collect();
        let (group, version, kind) = match parts.as_slice() {
            [version, kind] => ("", *version, *kind),
            [group, version, kind] => (*group, *version, *kind),
            _ => bail!("kind {text:?}: expected group/version/Kind, or v1/Kind for the core group"),
        };
        let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
        let group_ok = group
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-');
        if !ident(version) || !ident(kind) || !group_ok || !kind.starts_with(char::is_uppercase) {
            bail!(
                "kind {text:?}: expected group/version/Kind, e.g. serving.kserve.io/v1alpha1/ServingRuntime"
            );
        }
        Ok(Kind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        })
    }

    fn api_version(&self) -> String {
        match self.group.as_str() {
            "" => self.version.clone(),
            g => format!("{g}/{}", self.version),
        }
    }
}

impl Shape {
    fn from_args(args: &NewArgs) -> anyhow::Result<Shape> {
        let name = &args.name;
        let name_ok = (1..=63).contains(&name.len())
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && !name.ends_with('-')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            bail!(
                "plugin name {name:?}: 1-63 characters of [a-z0-9-], starting with a letter and not ending with '-'"
            );
        }
        let kind = Kind::parse(&args.kind)?;
        let controller = match args.controller.as_deref() {
            Some("none") => false,
            Some(other) => {
                let primary = Kind::parse(other)?;
                if primary.api_version() != kind.api_version() || primary.kind != kind.kind {
                    bail!(
                        "--controller {other:?} differs from --kind {:?}: the generated plugin acts on one kind; give it as --kind",
                        args.kind
                    );
                }
                true
            }
            None => true,
        };
        let (mut validate, mut mutate) = (false, false);
        for hook in args.webhooks.split(',').map(str::trim) {
            match hook {
                "validate" => validate = true,
                "mutate" => mutate = true,
                "none" | "" => {}
                other => bail!("--webhooks: {other:?} is not validate, mutate or none"),
            }
        }
        if !(controller || validate || mutate) {
            bail!("nothing to write: no controller and no webhook");
        }
        Ok(Shape {
            name: name.clone(),
            kind,
            controller,
            validate,
            mutate,
        })
    }

    fn values(&self, sdk_dependency: String) -> BTreeMap<&'static str, String> {
        let type_name: String = self
            .name
            .split('-')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let mut c = p.chars();
                c.next()
                    .map(|first| first.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
            .collect();
        let paths: Vec<&str> = [
            (self.mutate, "MUTATE_PATH"),
            (self.validate, "VALIDATE_PATH"),
        ]
        .into_iter()
        .filter_map(|(on, path)| on.then_some(path))
        .collect();
        BTreeMap::from([
            ("name", self.name.clone()),
            ("crate_name", self.name.replace('-', "_")),
            ("type_name", type_name),
            ("group", self.kind.group.clone()),
            ("version", self.kind.version.clone()),
            ("kind", self.kind.kind.clone()),
            ("api_version", self.kind.api_version()),
            ("label", format!("example.com/{}", self.name)),
            ("tier_annotation", format!("example.com/{}-tier", self.name)),
            ("webhook_paths", paths.join(", ")),
            ("webhook_count", paths.len().to_string()),
            ("sdk_dependency", sdk_dependency),
            ("rust_version", RUST_VERSION.into()),
        ])
    }

    fn sections(&self) -> BTreeMap<&'static str, bool> {
        BTreeMap::from([
            ("controller", self.controller),
            ("validate", self.validate),
            ("mutate", self.mutate),
            ("webhooks", self.validate || self.mutate),
        ])
    }
}

/// `template` with `{{key}}` replaced and the lines between `{{#section}}` and `{{/section}}`
/// (each marker on a line of its own) kept only where the section is on.
fn render(
    template: &str,
    values: &BTreeMap<&str, String>,
    sections: &BTreeMap<&str, bool>,
) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut open: Vec<(&str, bool)> = Vec::new();
    for line in template.lines() {
        let marker = line.trim();
        if let Some(name) = marker
            .strip_prefix("{{#")
            .and_then(|m| m.strip_suffix("}}"))
        {
            let on = *sections
                .get(name)
                .with_context(|| format!("unknown section {name:?}"))?;
            open.push((name, on));
            continue;
        }
        if let Some(name) = marker
            .strip_prefix("{{/")
            .and_then(|m| m.strip_suffix("}}"))
        {
            match open.pop() {
                Some((n, _)) if n == name => continue,
                _ => bail!("section {name:?} closed but not open"),
            }
        }
        if open.iter().any(|(_, on)| !on) {
            continue;
        }
        let mut line = line.to_string();
        for (key, value) in values {
            line = line.replace(&format!("{{{{{key}}}}}"), value);
        }
        if let Some(start) = line.find("{{")
            && line[start..].contains("}}")
        {
            bail!("unreplaced placeholder in {line:?}");
        }
        out.push_str(&line);
        out.push('\n');
    }
    if let Some((name, _)) = open.pop() {
        bail!("section {name:?} not closed");
    }
    Ok(out)
}

/// `plugin new`: writes the crate and says what it wrote and what to run next.
pub fn new(args: &NewArgs) -> anyhow::Result<Value> {
    let shape = Shape::from_args(args)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(&shape.name));
    if out.exists() {
        let empty = std::fs::read_dir(&out)
            .with_context(|| format!("reading {}", out.display()))?
            .next()
            .is_none();
        if !empty {
            bail!("{} exists and is not empty: nothing written", out.display());
        }
    }
    let sdk_dependency = match &args.sdk_path {
        Some(path) => {
            let path = std::path::absolute(path)
                .with_context(|| format!("resolving {}", path.display()))?;
            if !path.join("Cargo.toml").is_file() {
                bail!(
                    "--sdk-path {}: no Cargo.toml there (expected <checkout>/plugins/sdk)",
                    path.display()
                );
            }
            format!(
                "odh-plugin-sdk = {{ path = {:?} }}",
                path.display().to_string()
            )
        }
        None => format!(
            "odh-plugin-sdk = {{ git = \"{SDK_GIT}\", tag = {:?} }}",
            args.sdk_tag
        ),
    };
    let values = shape.values(sdk_dependency);
    let sections = shape.sections();
    let files: Vec<(&str, &str)> = TEMPLATES
        .iter()
        .copied()
        .chain(shape.validate.then_some(DENIED_SAMPLE))
        .collect();
    // Rendered in full before anything is written: a template error leaves no half crate.
    let rendered = files
        .iter()
        .map(|(path, template)| Ok((*path, render(template, &values, &sections)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for (path, text) in &rendered {
        write(&out.join(path), text)?;
    }
    Ok(json!({
        "plugin": shape.name,
        "directory": out.display().to_string(),
        "files": rendered.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        "next": [
            format!("cd {}", out.display()),
            "cargo test",
            "cargo build --profile wasm --target wasm32-wasip2",
            format!("odh-model-controller plugin inspect target/wasm32-wasip2/wasm/{}.wasm", values["crate_name"]),
        ],
    }))
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> NewArgs {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            new: NewArgs,
        }
        let mut argv = vec!["new", "acme-license"];
        argv.extend(extra);
        Cli::parse_from(argv).new
    }

    #[test]
    fn the_toolchain_is_the_repositorys() {
        let toolchain = include_str!("../../../../rust-toolchain.toml");
        assert!(
            toolchain.contains(&format!("channel = \"{RUST_VERSION}\"")),
            "{toolchain}"
        );
    }

    #[test]
    fn a_new_plugin_links_with_the_built_ins_initial_memory() {
        let ours = include_str!("../../../../.cargo/config.toml");
        let (_, theirs) = TEMPLATES
            .iter()
            .find(|(path, _)| *path == ".cargo/config.toml")
            .expect("a .cargo/config.toml template");
        let settings = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .map(str::to_string)
                .collect()
        };
        assert_eq!(settings(theirs), settings(ours));
        assert!(theirs.contains("--initial-memory=4194304"), "{theirs}");
    }

    #[test]
    fn sections_follow_the_flags_and_every_placeholder_is_filled() {
        for (flags, controller, validate, mutate) in [
            (vec![], true, true, true),
            (
                vec!["--webhooks", "validate", "--controller", "none"],
                false,
                true,
                false,
            ),
            (
                vec!["--webhooks", "none", "--kind", "v1/ConfigMap"],
                true,
                false,
                false,
            ),
        ] {
            let shape = Shape::from_args(&args(&flags)).unwrap();
            assert_eq!(
                (shape.controller, shape.validate, shape.mutate),
                (controller, validate, mutate)
            );
            let values = shape.values("odh-plugin-sdk = { path = \"/sdk\" }".into());
            for (path, template) in TEMPLATES.iter().chain([&DENIED_SAMPLE]) {
                let text = render(template, &values, &shape.sections()).unwrap();
                assert!(!text.contains("{{"), "{path}: {text}");
                assert_eq!(
                    text.contains("fn reconcile"),
                    controller && ["src/lib.rs", "tests/plugin.rs"].contains(path),
                    "{path}"
                );
            }
        }
        let lib = |flags: &[&str]| {
            let shape = Shape::from_args(&args(flags)).unwrap();
            render(
                TEMPLATES[4].1,
                &shape.values(String::new()),
                &shape.sections(),
            )
            .unwrap()
        };
        assert!(lib(&[]).contains("pub struct AcmeLicense;"));
        assert!(lib(&["--kind", "v1/ConfigMap"]).contains("gvk(\"\", \"v1\", \"ConfigMap\")"));
        assert!(!lib(&["--webhooks", "mutate"]).contains("VALIDATE_PATH"));
    }

    #[test]
    fn bad_arguments_are_refused_before_anything_is_written() {
        for (flags, name, expected) in [
            (vec![], "Acme", "plugin name \"Acme\""),
            (
                vec!["--kind", "ServingRuntime"],
                "ok",
                "expected group/version/Kind",
            ),
            (
                vec!["--webhooks", "audit"],
                "ok",
                "\"audit\" is not validate",
            ),
            (
                vec!["--webhooks", "none", "--controller", "none"],
                "ok",
                "nothing to write",
            ),
            (
                vec!["--controller", "v1/Secret"],
                "ok",
                "differs from --kind",
            ),
        ] {
            let mut a = args(&flags);
            a.name = name.into();
            let e = Shape::from_args(&a).unwrap_err().to_string();
            assert!(e.contains(expected), "{flags:?}: {e}");
        }
        let dir = std::env::temp_dir().join(format!("odh-plugin-new-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("keep"), "").unwrap();
        let mut a = args(&[]);
        a.out = Some(dir.clone());
        let e = new(&a).unwrap_err().to_string();
        let left = std::fs::read_dir(&dir).unwrap().count();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.contains("exists and is not empty"), "{e}");
        assert_eq!(left, 1);
    }

    #[test]
    fn unbalanced_sections_are_errors() {
        let values = BTreeMap::new();
        let sections = BTreeMap::from([("a", true)]);
        assert!(render("{{#a}}\nx\n", &values, &sections).is_err());
        assert!(render("x\n{{/a}}\n", &values, &sections).is_err());
        assert!(render("{{#b}}\n{{/b}}\n", &values, &sections).is_err());
        assert!(render("{{missing}}\n", &values, &sections).is_err());
        assert_eq!(
            render("{{#a}}\nx\n{{/a}}\n", &values, &sections).unwrap(),
            "x\n"
        );
    }
}
