//! A test double of Authorino: evaluates a Kuadrant `AuthPolicy` (the parts of its API that the
//! Gateway AuthPolicy uses) for one HTTP request, against a small model of
//! Kubernetes authentication (TokenReview) and RBAC (SubjectAccessReview).
//!
//! What it models, after Authorino's documented behaviour:
//! - authentication: `kubernetesTokenReview` with the default credentials
//!   (`Authorization: Bearer <token>`); no token, an unknown token or one without any of the
//!   policy's audiences is 401. The identity is the TokenReview status (`authenticated`,
//!   `user.username`, `user.groups`, `audiences`); `overrides` (and `defaults`) then set
//!   properties on it, a `value` verbatim, an `expression` by CEL against the identity
//!   before them;
//! - CEL (cel-go with the strings extension in Authorino; the `cel` crate here, its strings
//!   extension and regex `matches`) over `request.path`, `request.method`,
//!   `request.headers` (lower-case keys) and `auth.identity`;
//! - named `patterns` (`allOf`/`anyOf` of selector/operator/value, selectors resolved in the
//!   authorization JSON, operators `eq`, `neq`, `matches`), and `when` lists of
//!   `patternRef` / `predicate` / selector entries, all of which must hold;
//! - authorization: every rule whose `when` holds is evaluated, all must pass, else 403;
//!   `kubernetesSubjectAccessReview` (user, groups, resource attributes from `value` or
//!   `expression`) and `patternMatching`. A CEL error in a rule is a failed rule;
//! - `response.success.headers` with `plain.expression` / `plain.value` and `when`, appended
//!   to the upstream request headers (Authorino appends; it does not overwrite).
//!
//! Anything else in a policy (another identity kind, `response.unauthorized`, metadata, a
//! `json` header, an unknown operator) is not modelled: the evaluator panics on it rather
//! than ignore it, so the test cannot pass on a policy it does not understand.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use odh_plugin_sdk::{Value, json};

/// A ServiceAccount token of the model cluster.
#[derive(Debug, Clone)]
pub struct Token {
    pub token: String,
    pub username: String,
    pub groups: Vec<String>,
    pub audiences: Vec<String>,
}

/// One RBAC permission of a subject (a user name or a group name): a Role rule bound to it.
/// `namespace: None` is a ClusterRoleBinding; `name: None` is any resource name.
#[derive(Debug, Clone)]
pub struct Grant {
    pub subject: String,
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// The Kubernetes side: tokens (TokenReview) and grants (SubjectAccessReview).
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub tokens: Vec<Token>,
    pub grants: Vec<Grant>,
}

pub const KUBE_AUDIENCE: &str = "https://kubernetes.default.svc";

pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

impl Cluster {
    /// A ServiceAccount with a token for the API server audience; returns the token.
    pub fn service_account(&mut self, namespace: &str, name: &str) -> String {
        self.service_account_with_audience(namespace, name, KUBE_AUDIENCE)
    }

    pub fn service_account_with_audience(
        &mut self,
        namespace: &str,
        name: &str,
        audience: &str,
    ) -> String {
        let token = format!("token:{namespace}:{name}:{audience}");
        self.tokens.push(Token {
            token: token.clone(),
            username: service_account_user(namespace, name),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            audiences: vec![audience.into()],
        });
        token
    }

    /// A namespaced Role rule (`verb` on `group`/`resource`, any name) bound to `subject`.
    pub fn grant(&mut self, subject: &str, verb: &str, group: &str, resource: &str, ns: &str) {
        self.grants.push(Grant {
            subject: subject.into(),
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: Some(ns.into()),
            name: None,
        });
    }

    /// The same, restricted to one `resourceNames` entry.
    pub fn grant_named(
        &mut self,
        subject: &str,
        verb: &str,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) {
        self.grant(subject, verb, group, resource, ns);
        self.grants.last_mut().unwrap().name = Some(name.into());
    }

    /// The namespace of the ServiceAccount that `token` belongs to.
    pub fn token_namespace(&self, token: &str) -> Option<String> {
        let known = self.tokens.iter().find(|t| t.token == token)?;
        let rest = known.username.strip_prefix("system:serviceaccount:")?;
        rest.split(':').next().map(str::to_owned)
    }

    /// The RBAC authorizer for a resource SubjectAccessReview: exact strings (a resource
    /// `a/b` is matched as written, as a SAR without `subresource` is), `*` as a wildcard.
    pub fn allowed(&self, review: &Review) -> bool {
        let wild = |rule: &str, value: &str| rule == "*" || rule == value;
        self.grants.iter().any(|g| {
            (g.subject == review.user || review.groups.contains(&g.subject))
                && wild(&g.verb, &review.verb)
                && wild(&g.group, &review.group)
                && wild(&g.resource, &review.resource)
                && g.namespace
                    .as_deref()
                    .is_none_or(|ns| ns == review.namespace)
                && g.name.as_deref().is_none_or(|n| n == review.name)
        })
    }
}

/// An HTTP request at the gateway.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// In order, names lower-case (as Envoy hands them to Authorino).
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn get(path: &str) -> Self {
        Request {
            method: "GET".into(),
            path: path.into(),
            headers: Vec::new(),
        }
    }

    pub fn post(path: &str) -> Self {
        Request {
            method: "POST".into(),
            ..Request::get(path)
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }
}

/// A SubjectAccessReview that a rule sent, and the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub rule: String,
    pub user: String,
    pub groups: Vec<String>,
    pub namespace: String,
    pub group: String,
    pub resource: String,
    pub name: String,
    pub verb: String,
    pub allowed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// 200: the headers the policy injected, and the request headers as the upstream (the
    /// echo server) sees them: the client's, then the injected ones appended.
    Allowed {
        injected: BTreeMap<String, String>,
        upstream: Vec<(String, String)>,
    },
    /// 401, with why.
    Unauthenticated(String),
    /// 403: every rule that applied and did not pass.
    Forbidden(BTreeSet<String>),
}

impl Verdict {
    pub fn status(&self) -> u16 {
        match self {
            Verdict::Allowed { .. } => 200,
            Verdict::Unauthenticated(_) => 401,
            Verdict::Forbidden(_) => 403,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Evaluation {
    pub verdict: Verdict,
    /// The authorization rules whose `when` held, in evaluation order.
    pub applied: Vec<String>,
    pub reviews: Vec<Review>,
}

fn keys_within(what: &str, v: &Value, allowed: &[&str]) {
    let map = v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object: {v}"));
    for key in map.keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "{what}: `{key}` is not modelled by this Authorino test double"
        );
    }
}

/// The CEL environment of Authorino: the standard library and the strings extension.
pub struct Cel {
    env: Arc<cel::Env>,
}

impl Default for Cel {
    fn default() -> Self {
        let mut env = cel::Env::stdlib();
        env.add_extension(cel::extensions::strings)
            .expect("the strings extension registers");
        Cel { env: Arc::new(env) }
    }
}

impl Cel {
    /// Evaluates `source` with the top-level variables of `vars` (a JSON object).
    /// A source that does not compile panics: Authorino would not accept the policy.
    pub fn eval(&self, source: &str, vars: &Value) -> Result<Value, String> {
        let program = self.env.compile(source).unwrap_or_else(|e| {
            panic!("CEL does not compile (policy not accepted): {source}: {e}")
        });
        let mut context = cel::Context::with_env(Arc::clone(&self.env));
        for (name, value) in vars.as_object().expect("CEL variables are an object") {
            context.add_variable_from_value(
                name.clone(),
                cel::to_value(value).expect("JSON converts to CEL"),
            );
        }
        program
            .execute(&context)
            .map(from_cel)
            .map_err(|e| format!("{source}: {e}"))
    }

    pub fn eval_bool(&self, source: &str, vars: &Value) -> Result<bool, String> {
        match self.eval(source, vars)? {
            Value::Bool(b) => Ok(b),
            other => Err(format!("{source}: not a bool: {other}")),
        }
    }

    /// RE2-style unanchored search (cel-go's `matches`, Authorino's `matches` operator).
    pub fn matches(&self, subject: &str, regex: &str) -> bool {
        self.eval_bool("s.matches(re)", &json!({"s": subject, "re": regex}))
            .unwrap_or_else(|e| panic!("regex {regex}: {e}"))
    }
}

fn from_cel(value: cel::Value) -> Value {
    match value {
        cel::Value::String(s) => Value::String(s.as_str().to_owned()),
        cel::Value::Bool(b) => Value::Bool(b),
        cel::Value::Int(i) => json!(i),
        cel::Value::UInt(u) => json!(u),
        cel::Value::Float(f) => json!(f),
        cel::Value::Null => Value::Null,
        cel::Value::List(items) => Value::Array(items.iter().cloned().map(from_cel).collect()),
        cel::Value::Map(map) => Value::Object(
            map.map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        cel::objects::Key::String(s) => s.as_str().to_owned(),
                        cel::objects::Key::Int(i) => i.to_string(),
                        cel::objects::Key::Uint(u) => u.to_string(),
                        cel::objects::Key::Bool(b) => b.to_string(),
                    };
                    (key, from_cel(v.clone()))
                })
                .collect(),
        ),
        other => panic!("CEL value not modelled: {other:?}"),
    }
}

/// The authorization JSON of one request: `request`/`auth` for CEL, `context` for selectors.
struct AuthJson {
    request: Value,
    context: Value,
    identity: Value,
}

impl AuthJson {
    fn cel_vars(&self) -> Value {
        json!({"request": self.request, "auth": {"identity": self.identity}})
    }

    fn selector(&self, selector: &str) -> Value {
        let root = json!({"context": self.context, "request": self.request, "auth": {"identity": self.identity}});
        let mut at = &root;
        for part in selector.split('.') {
            assert!(
                !part.is_empty() && !part.contains(['@', '|', '#', '*', '?']),
                "selector {selector}: only plain dotted paths are modelled"
            );
            at = &at[part];
        }
        at.clone()
    }
}

pub struct Authorino<'a> {
    pub policy: &'a Value,
    pub cluster: &'a Cluster,
    pub cel: Cel,
}

impl<'a> Authorino<'a> {
    pub fn new(policy: &'a Value, cluster: &'a Cluster) -> Self {
        let spec = &policy["spec"];
        keys_within("spec", spec, &["targetRef", "patterns", "rules"]);
        keys_within(
            "spec.rules",
            &spec["rules"],
            &["authentication", "authorization", "response"],
        );
        Authorino {
            policy,
            cluster,
            cel: Cel::default(),
        }
    }

    fn rules(&self) -> &Value {
        &self.policy["spec"]["rules"]
    }

    /// Evaluates one request.
    pub fn check(&self, request: &Request) -> Evaluation {
        let mut headers = odh_plugin_sdk::serde_json::Map::new();
        for (name, value) in &request.headers {
            // Envoy joins repeated headers with a comma.
            let joined = match headers.get(name) {
                Some(Value::String(old)) => format!("{old},{value}"),
                _ => value.clone(),
            };
            headers.insert(name.clone(), Value::String(joined));
        }
        let request_json =
            json!({"path": request.path, "method": request.method, "headers": headers});
        let context = json!({"request": {"http": request_json}});
        let mut auth = AuthJson {
            request: request_json,
            context,
            identity: Value::Null,
        };
        let mut evaluation = Evaluation {
            verdict: Verdict::Forbidden(BTreeSet::new()),
            applied: Vec::new(),
            reviews: Vec::new(),
        };
        match self.authenticate(&auth) {
            Ok(identity) => auth.identity = identity,
            Err(why) => {
                evaluation.verdict = Verdict::Unauthenticated(why);
                return evaluation;
            }
        }
        let denied = self.authorize(&auth, &mut evaluation);
        if !denied.is_empty() {
            evaluation.verdict = Verdict::Forbidden(denied);
            return evaluation;
        }
        let injected = self.success_headers(&auth);
        let mut upstream = request.headers.clone();
        upstream.extend(injected.iter().map(|(k, v)| (k.clone(), v.clone())));
        evaluation.verdict = Verdict::Allowed { injected, upstream };
        evaluation
    }

    /// Identity sources in priority order; the first that resolves wins.
    fn authenticate(&self, auth: &AuthJson) -> Result<Value, String> {
        let sources = self.rules()["authentication"]
            .as_object()
            .expect("spec.rules.authentication is a map");
        assert!(!sources.is_empty(), "no identity source");
        let mut ordered: Vec<(&String, &Value)> = sources.iter().collect();
        ordered.sort_by_key(|(name, s)| (s["priority"].as_i64().unwrap_or(0), *name));
        let mut why = Vec::new();
        for (name, source) in ordered {
            keys_within(
                &format!("authentication {name}"),
                source,
                &[
                    "kubernetesTokenReview",
                    "overrides",
                    "defaults",
                    "priority",
                    "metrics",
                ],
            );
            let review = source.get("kubernetesTokenReview").unwrap_or_else(|| {
                panic!("authentication {name}: only kubernetesTokenReview is modelled")
            });
            keys_within("kubernetesTokenReview", review, &["audiences"]);
            match self.token_review(auth, review) {
                Ok(identity) => return Ok(self.extend_identity(name, source, identity, auth)),
                Err(e) => why.push(format!("{name}: {e}")),
            }
        }
        Err(why.join("; "))
    }

    fn token_review(&self, auth: &AuthJson, review: &Value) -> Result<Value, String> {
        let header = auth.request["headers"]["authorization"]
            .as_str()
            .ok_or("credential not found")?;
        let token = header
            .strip_prefix("Bearer ")
            .ok_or("credential not found")?;
        let audiences: Vec<&str> = review["audiences"]
            .as_array()
            .expect("kubernetesTokenReview.audiences is a list (this double needs them)")
            .iter()
            .map(|a| a.as_str().expect("an audience is a string"))
            .collect();
        let known = self
            .cluster
            .tokens
            .iter()
            .find(|t| t.token == token)
            .ok_or("token not authenticated")?;
        let matched: Vec<&String> = known
            .audiences
            .iter()
            .filter(|a| audiences.contains(&a.as_str()))
            .collect();
        if matched.is_empty() {
            return Err("token audiences do not match".into());
        }
        Ok(json!({
            "authenticated": true,
            "user": {"username": known.username, "groups": known.groups},
            "audiences": matched,
        }))
    }

    fn extend_identity(
        &self,
        name: &str,
        source: &Value,
        identity: Value,
        auth: &AuthJson,
    ) -> Value {
        let vars = json!({"request": auth.request, "auth": {"identity": identity}});
        let mut extended = identity.clone();
        for (kind, overwrite) in [("defaults", false), ("overrides", true)] {
            let Some(props) = source.get(kind) else {
                continue;
            };
            for (prop, spec) in props.as_object().expect("properties are a map") {
                keys_within(
                    &format!("{name}.{kind}.{prop}"),
                    spec,
                    &["value", "expression"],
                );
                let value = match (spec.get("value"), spec.get("expression")) {
                    (Some(v), None) => v.clone(),
                    (None, Some(Value::String(e))) => self
                        .cel
                        .eval(e, &vars)
                        .unwrap_or_else(|err| panic!("{name}.{kind}.{prop}: {err}")),
                    _ => panic!("{name}.{kind}.{prop}: one of value or expression"),
                };
                if overwrite || extended.get(prop).is_none() {
                    extended[prop] = value;
                }
            }
        }
        extended
    }

    /// Whether every entry of a `when` (or a pattern list) holds.
    fn holds(&self, entries: &Value, auth: &AuthJson, what: &str) -> Result<bool, String> {
        let Some(entries) = entries.as_array() else {
            assert!(entries.is_null(), "{what}: a when is a list");
            return Ok(true);
        };
        for entry in entries {
            if !self.entry_holds(entry, auth, what)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn entry_holds(&self, entry: &Value, auth: &AuthJson, what: &str) -> Result<bool, String> {
        if let Some(name) = entry.get("patternRef") {
            keys_within(what, entry, &["patternRef"]);
            let name = name.as_str().expect("patternRef is a string");
            let pattern = &self.policy["spec"]["patterns"][name];
            assert!(!pattern.is_null(), "{what}: unknown pattern {name}");
            return self.entry_holds(pattern, auth, &format!("pattern {name}"));
        }
        if let Some(predicate) = entry.get("predicate") {
            keys_within(what, entry, &["predicate"]);
            let predicate = predicate.as_str().expect("predicate is a string");
            return self.cel.eval_bool(predicate, &auth.cel_vars());
        }
        if let Some(all) = entry.get("allOf") {
            keys_within(what, entry, &["allOf"]);
            return self.holds(all, auth, what);
        }
        if let Some(any) = entry.get("anyOf") {
            keys_within(what, entry, &["anyOf"]);
            for e in any.as_array().expect("anyOf is a list") {
                if self.entry_holds(e, auth, what)? {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        keys_within(what, entry, &["selector", "operator", "value"]);
        let selected = auth.selector(entry["selector"].as_str().expect("selector"));
        let value = entry["value"]
            .as_str()
            .expect("a pattern value is a string");
        let text = match &selected {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        Ok(match entry["operator"].as_str().expect("operator") {
            "eq" => text == value,
            "neq" => text != value,
            "matches" => self.cel.matches(&text, value),
            other => panic!("{what}: operator {other} is not modelled"),
        })
    }

    /// Every rule whose `when` holds; returns the rules that did not pass.
    fn authorize(&self, auth: &AuthJson, evaluation: &mut Evaluation) -> BTreeSet<String> {
        let mut denied = BTreeSet::new();
        let Some(rules) = self.rules().get("authorization") else {
            return denied;
        };
        let mut ordered: Vec<(&String, &Value)> = rules
            .as_object()
            .expect("authorization is a map")
            .iter()
            .collect();
        ordered.sort_by_key(|(name, r)| (r["priority"].as_i64().unwrap_or(0), *name));
        for (name, rule) in ordered {
            keys_within(
                &format!("authorization {name}"),
                rule,
                &[
                    "when",
                    "kubernetesSubjectAccessReview",
                    "patternMatching",
                    "priority",
                    "metrics",
                ],
            );
            match self.holds(&rule["when"], auth, name) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    eprintln!("{name}: when failed: {e}");
                    denied.insert(name.clone());
                    continue;
                }
            }
            evaluation.applied.push(name.clone());
            let passed = if let Some(sar) = rule.get("kubernetesSubjectAccessReview") {
                self.subject_access_review(name, sar, auth, evaluation)
            } else if let Some(pm) = rule.get("patternMatching") {
                keys_within("patternMatching", pm, &["patterns"]);
                self.holds(&pm["patterns"], auth, name)
            } else {
                panic!("authorization {name}: no modelled evaluator");
            };
            match passed {
                Ok(true) => {}
                Ok(false) => {
                    denied.insert(name.clone());
                }
                Err(e) => {
                    eprintln!("{name}: {e}");
                    denied.insert(name.clone());
                }
            }
        }
        denied
    }

    fn string_of(&self, spec: &Value, auth: &AuthJson, what: &str) -> Result<Value, String> {
        keys_within(what, spec, &["value", "expression"]);
        match (spec.get("value"), spec.get("expression")) {
            (Some(v), None) => Ok(v.clone()),
            (None, Some(Value::String(e))) => self.cel.eval(e, &auth.cel_vars()),
            _ => panic!("{what}: one of value or expression"),
        }
    }

    fn subject_access_review(
        &self,
        rule: &str,
        sar: &Value,
        auth: &AuthJson,
        evaluation: &mut Evaluation,
    ) -> Result<bool, String> {
        keys_within(
            "kubernetesSubjectAccessReview",
            sar,
            &["user", "authorizationGroups", "resourceAttributes"],
        );
        let user = self.string_of(&sar["user"], auth, "user")?;
        let groups = match sar.get("authorizationGroups") {
            Some(spec) => self.string_of(spec, auth, "authorizationGroups")?,
            None => json!([]),
        };
        let attrs = sar
            .get("resourceAttributes")
            .unwrap_or_else(|| panic!("{rule}: only resource reviews are modelled"));
        keys_within(
            "resourceAttributes",
            attrs,
            &["namespace", "group", "resource", "name", "verb"],
        );
        let attr = |key: &str| -> Result<String, String> {
            match attrs.get(key) {
                None => Ok(String::new()),
                Some(spec) => match self.string_of(spec, auth, key)? {
                    Value::String(s) => Ok(s),
                    other => Err(format!("{rule}.{key}: not a string: {other}")),
                },
            }
        };
        let review = Review {
            rule: rule.into(),
            user: user
                .as_str()
                .ok_or_else(|| format!("{rule}: user is not a string: {user}"))?
                .into(),
            groups: groups
                .as_array()
                .ok_or_else(|| format!("{rule}: groups are not a list: {groups}"))?
                .iter()
                .map(|g| g.as_str().map(str::to_owned).ok_or("a group is a string"))
                .collect::<Result<_, _>>()?,
            namespace: attr("namespace")?,
            group: attr("group")?,
            resource: attr("resource")?,
            name: attr("name")?,
            verb: attr("verb")?,
            allowed: false,
        };
        let allowed = self.cluster.allowed(&review);
        evaluation.reviews.push(Review { allowed, ..review });
        Ok(allowed)
    }

    fn success_headers(&self, auth: &AuthJson) -> BTreeMap<String, String> {
        let mut injected = BTreeMap::new();
        let response = &self.rules()["response"];
        if response.is_null() {
            return injected;
        }
        keys_within("response", response, &["success"]);
        keys_within("response.success", &response["success"], &["headers"]);
        let Some(headers) = response["success"]["headers"].as_object() else {
            return injected;
        };
        for (name, spec) in headers {
            keys_within(
                &format!("header {name}"),
                spec,
                &["when", "plain", "priority", "metrics"],
            );
            let applies = self
                .holds(&spec["when"], auth, name)
                .unwrap_or_else(|e| panic!("header {name}: when: {e}"));
            if !applies {
                continue;
            }
            let value = self
                .string_of(&spec["plain"], auth, name)
                .unwrap_or_else(|e| panic!("header {name}: {e}"));
            let value = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            injected.insert(name.clone(), value);
        }
        injected
    }
}
