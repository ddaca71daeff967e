//! NVIDIA's APIs (docs/plugins/nim-account.md, "NVIDIA's APIs"): the NGC catalog of NIM runtimes,
//! API-key validation (personal `nvapi-` keys and legacy keys) and the per-model data of the
//! model-info ConfigMap.

use std::collections::BTreeMap;

use odh_plugin_sdk::http::{Client, Request, Response};
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Error, base64, go};
use serde::{Deserialize, Serialize};

/// The hosts the plugin talks to, and nothing else.
pub const HOSTS: [&str; 3] = ["api.ngc.nvidia.com", "nvcr.io", "authn.nvidia.com"];

const CATALOG: &str = "https://api.ngc.nvidia.com/v2/search/catalog/resources/CONTAINER";
const CALLER_INFO: &str = "https://api.ngc.nvidia.com/v3/keys/get-caller-info";
const NGC_TOKEN: &str = "https://authn.nvidia.com/token?service=ngc&";
const PAGE_SIZE: i64 = 1000;

/// A NIM runtime of the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    /// `nim/<team>/<image>`.
    pub resource: String,
    /// The latest tag.
    pub version: String,
    pub org: String,
    pub team: String,
    pub image: String,
    /// The NGC model name (`phi-3-mini-4k-instruct`).
    pub name: String,
}

/// Whether the key is a personal key (`nvapi-...`); anything else is a legacy key.
pub fn is_personal(key: &str) -> bool {
    key.starts_with("nvapi-")
}

fn send(http: &dyn Client, request: Request) -> Result<Response, Error> {
    log(
        Level::Debug,
        &format!("sending api request {}", request.url),
    );
    let response = http.request(&request)?;
    log(
        Level::Debug,
        &format!("got api response {}", response.status),
    );
    Ok(response)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct CatalogPage {
    result_page_total: i64,
    params: PageParams,
    results: Vec<ResultGroup>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PageParams {
    page: i64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ResultGroup {
    group_value: String,
    resources: Vec<Resource>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Resource {
    resource_id: String,
    name: String,
    attributes: Vec<Attribute>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Attribute {
    key: String,
    value: String,
}

/// The catalog URL of one page: the query JSON in upstream's field order, form-encoded as `q`.
pub fn catalog_url(page: i64) -> String {
    let query = format!(r#"{{"query":"orgName:nim","page":{page},"pageSize":{PAGE_SIZE}}}"#);
    format!("{CATALOG}?q={}", go::query_escape(&query))
}

/// Every NIM runtime of the catalog, page after page, in catalog order (call A).
pub fn fetch_catalog(http: &dyn Client) -> Result<Vec<Runtime>, Error> {
    let mut runtimes = Vec::new();
    let mut page = 0;
    loop {
        let response = send(http, Request::get(&catalog_url(page)))?;
        if response.status != 200 {
            return Err(Error::Transient(go::status_line(response.status)));
        }
        let body: CatalogPage = response.json()?;
        for group in body.results.iter().filter(|g| g.group_value == "CONTAINER") {
            runtimes.extend(group.resources.iter().filter_map(runtime_of));
        }
        if body.params.page < body.result_page_total - 1 {
            page += 1;
        } else {
            return Ok(runtimes);
        }
    }
}

fn runtime_of(resource: &Resource) -> Option<Runtime> {
    let tag = resource.attributes.iter().find(|a| a.key == "latestTag")?;
    // Upstream would panic on fewer than three segments; such a resource is skipped.
    let mut parts = resource.resource_id.split('/');
    let (org, team, image) = (parts.next()?, parts.next()?, parts.next()?);
    Some(Runtime {
        resource: resource.resource_id.clone(),
        version: tag.value.clone(),
        org: org.into(),
        team: team.into(),
        image: image.into(),
        name: resource.name.clone(),
    })
}

/// Keeps the runtimes named in `models` (all of them when the list is empty).
pub fn filter_runtimes(runtimes: Vec<Runtime>, models: &[String]) -> Vec<Runtime> {
    if models.is_empty() {
        return runtimes;
    }
    runtimes
        .into_iter()
        .filter(|r| models.contains(&r.name))
        .collect()
}

/// Validates the key: a personal key with call B, a legacy key by pulling a manifest
/// of the first runtime whose content is available (calls C and D).
pub fn validate_key(http: &dyn Client, key: &str, runtimes: &[Runtime]) -> Result<(), Error> {
    if is_personal(key) {
        let request = Request::post(CALLER_INFO)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Authorization", &format!("Bearer {key}"))
            .body(format!("credentials={key}"));
        let response = send(http, request)?;
        if response.status != 200 {
            return Err(Error::Denied(format!(
                "got response {}",
                go::status_line(response.status)
            )));
        }
        return Ok(());
    }
    log(
        Level::Info,
        "a legacy api key is deprecated, use a personal key (nvapi-...)",
    );
    for runtime in runtimes {
        let token = registry_token(http, key, &runtime.resource)?;
        let manifest = format!(
            "https://nvcr.io/v2/{}/manifests/{}",
            runtime.resource, runtime.version
        );
        let request = Request::get(&manifest)
            .header("Authorization", &format!("Bearer {token}"))
            .header("Accept", "application/vnd.oci.image.index.v1+json");
        match send(http, request)?.status {
            200 => return Ok(()),
            451 => continue,
            _ => break,
        }
    }
    Err(Error::Denied("failed to validate api key".into()))
}

#[derive(Deserialize)]
struct Token {
    token: String,
}

fn token_from(response: Response) -> Result<String, Error> {
    if response.status != 200 {
        return Err(Error::Denied(format!(
            "got response {}",
            go::status_line(response.status)
        )));
    }
    Ok(response.json::<Token>()?.token)
}

// Call C: a pull token for one repository, from the legacy key.
fn registry_token(http: &dyn Client, key: &str, resource: &str) -> Result<String, Error> {
    let url = format!(
        "https://nvcr.io/proxy_auth?account=$oauthtoken&offline_token=true&scope=repository:{resource}:pull"
    );
    let basic = base64::encode(format!("$oauthtoken:{key}"));
    token_from(send(
        http,
        Request::get(&url).header("Authorization", &format!("Basic {basic}")),
    )?)
}

/// The fields of a model the ConfigMap keeps, in upstream's order.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelData {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub short_description: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub latest_tag: String,
    #[serde(default)]
    pub updated_date: String,
}

/// The model-info data (calls E and F): one compact JSON value per model, keyed by model name. A
/// model whose data cannot be fetched is skipped; none at all is an error.
pub fn model_data(
    http: &dyn Client,
    key: &str,
    runtimes: &[Runtime],
) -> Result<BTreeMap<String, String>, Error> {
    let bearer = if is_personal(key) {
        key.to_string()
    } else {
        let request = Request::get(NGC_TOKEN).header("Authorization", &format!("ApiKey {key}"));
        token_from(send(http, request)?)?
    };
    let mut data = BTreeMap::new();
    for runtime in runtimes {
        let url = format!(
            "https://api.ngc.nvidia.com/v2/org/{}/team/{}/repos/{}?resolve-labels=true",
            runtime.org, runtime.team, runtime.image
        );
        let request = Request::get(&url).header("Authorization", &format!("Bearer {bearer}"));
        let response = match send(http, request) {
            Ok(response) => response,
            Err(e) => {
                log(
                    Level::Error,
                    &format!("failed to fetch model data for {}: {e}", runtime.name),
                );
                continue;
            }
        };
        match response.status {
            200 => {}
            451 => {
                log(
                    Level::Info,
                    &format!("content not available for legal reasons: {}", runtime.name),
                );
                continue;
            }
            status => {
                log(
                    Level::Error,
                    &format!(
                        "failed to fetch model data for {}: {}",
                        runtime.name,
                        go::status_line(status)
                    ),
                );
                continue;
            }
        }
        match response.json::<ModelData>() {
            Ok(model) => {
                data.insert(model.name.clone(), go_json(&model));
            }
            Err(e) => log(
                Level::Error,
                &format!("bad model data for {}: {e}", runtime.name),
            ),
        }
    }
    if data.is_empty() {
        return Err(Error::Transient("no models found".into()));
    }
    Ok(data)
}

/// Compact JSON as Go's `encoding/json` writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn go_json(value: &impl Serialize) -> String {
    let text = serde_json::to_string(value).expect("plain data serializes");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}
