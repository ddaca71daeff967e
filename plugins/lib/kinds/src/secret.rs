//! [`Secret`]: a view of a Secret, its `data` decoded.

use odh_plugin_sdk::go::quote;
use odh_plugin_sdk::{Error, Value, base64};

use crate::view;

view! {
    /// A core `Secret`. The API serves `data` base64-encoded; [`Secret::data`] decodes it.
    Secret
}

impl<'a> Secret<'a> {
    /// `data[key]` decoded. None when the key is absent; a `null` value reads as empty, as
    /// Go's `[]byte` map does. Malformed base64 is [`Error::Invalid`]
    /// (`Secret data key "<key>" is not valid base64`).
    pub fn data(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        let Some(value) = self.object().get("data").and_then(|d| d.get(key)) else {
            return Ok(None);
        };
        let encoded = value.as_str().unwrap_or_default();
        base64::decode(encoded).map(Some).ok_or_else(|| {
            Error::Invalid(format!(
                "Secret data key {} is not valid base64",
                quote(key)
            ))
        })
    }

    /// [`Secret::data`] as text (invalid UTF-8 replaced).
    pub fn data_text(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self
            .data(key)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// `type` (`Opaque`, `kubernetes.io/dockerconfigjson`, ...).
    pub fn type_(&self) -> Option<&'a str> {
        self.object().get("type").and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::{Object, json};
    use odh_test_fixtures::secret;

    #[test]
    fn data_values() {
        let s = Object(
            secret("s")
                .data("a", "x")
                .set("/data/n", Value::Null)
                .set("/data/bad", "!!")
                .type_("Opaque")
                .build(),
        );
        let v = Secret::of(&s);
        assert_eq!(v.data_text("a").unwrap().as_deref(), Some("x"));
        assert_eq!(v.data("n").unwrap(), Some(Vec::new()));
        assert_eq!(v.data("missing").unwrap(), None);
        assert_eq!(
            v.data("bad"),
            Err(Error::Invalid(
                "Secret data key \"bad\" is not valid base64".into()
            ))
        );
        assert_eq!(v.type_(), Some("Opaque"));
        assert_eq!(Secret::of(&Object(json!({}))).data("a").unwrap(), None);
    }
}
