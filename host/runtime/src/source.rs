//! Where a plugin's component comes from: what `--plugin`, the plugins ConfigMap and
//! `plugin inspect` name, and what messages about a plugin print.

/// Where a plugin's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compiled into the host; `name` is the built-in's name.
    Builtin(String),
    /// `binaryData[key]` of ConfigMap `name` in the controller's namespace (gzip allowed).
    ConfigMap {
        name: String,
        key: String,
    },
    /// A file on the controller's filesystem.
    File(std::path::PathBuf),
    Https(String),
    Oci(String),
}

impl Source {
    pub fn parse(entry_name: &str, text: &str) -> Result<Self, String> {
        if text == "builtin" {
            return Ok(Self::Builtin(entry_name.to_string()));
        }
        if let Some(name) = text.strip_prefix("builtin:") {
            return Ok(Self::Builtin(name.to_string()));
        }
        if let Some(rest) = text.strip_prefix("configmap://") {
            let (name, key) = rest
                .split_once('/')
                .filter(|(n, k)| !n.is_empty() && !k.is_empty() && !k.contains('/'))
                .ok_or_else(|| format!("source {text:?}: expected configmap://<name>/<key>"))?;
            return Ok(Self::ConfigMap {
                name: name.to_string(),
                key: key.to_string(),
            });
        }
        if let Some(path) = text.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(format!("source {text:?}: a file:// path must be absolute"));
            }
            return Ok(Self::File(path.into()));
        }
        if text.starts_with("https://") {
            return Ok(Self::Https(text.to_string()));
        }
        if let Some(reference) = text.strip_prefix("oci://") {
            return Ok(Self::Oci(reference.to_string()));
        }
        Err(format!(
            "source {text:?}: expected builtin, builtin:<name>, configmap://<name>/<key>, file:///<path>, https://… or oci://…"
        ))
    }

    pub fn is_builtin(&self) -> bool {
        matches!(self, Self::Builtin(_))
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Builtin(n) => write!(f, "builtin:{n}"),
            Self::ConfigMap { name, key } => write!(f, "configmap://{name}/{key}"),
            Self::File(p) => write!(f, "file://{}", p.display()),
            Self::Https(u) => f.write_str(u),
            Self::Oci(r) => write!(f, "oci://{r}"),
        }
    }
}
