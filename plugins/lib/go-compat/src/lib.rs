//! Go's spellings, for ports of Go controllers whose parsing and error texts must match
//! upstream's byte for byte.
//!
//! Written once for the host and the plugins (as `odh-label-selector` is), std only. One module
//! per Go package:
//!
//! | module | Go |
//! |---|---|
//! | [`strconv`] | `strconv.Quote` (`%q`), `ParseBool`, `ParseInt`, `Atoi`, `ParseFloat` |
//! | [`time`] | `time.ParseDuration` and the `time` package's own quoting |
//! | [`json`] | `encoding/json`'s encoding of strings and of a `map[string]string` |
//! | [`url`] | `net/url`: `Parse` (for the host name), `QueryEscape`, `PathEscape`, `QueryUnescape` |
//! | [`netip`] | `net/netip.ParseAddr`, for `url`'s bracketed hosts |
//! | [`http`] | `net/http`'s `resp.Status` line |
//! | [`validation`] | apimachinery's `IsQualifiedName`, `IsValidLabelValue`, DNS-1123 names |
//!
//! Where two call sites have always printed something slightly differently from each other
//! (and from Go), both spellings are kept as separate, documented functions and their
//! differences are tested: [`strconv::quote`] and [`strconv::quote_narrow`],
//! [`json::string`] and [`json::string_before_go_1_22`], [`url::parse`] and [`url::check`]
//! (the same parse, quoting as each caller has).

pub mod http;
pub mod json;
pub mod netip;
pub mod strconv;
pub mod time;
pub mod url;
pub mod validation;
