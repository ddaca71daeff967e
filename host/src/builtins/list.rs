// The plugin registration list: every built-in plugin, in the order upstream registers their
// webhooks, and how the process environment configures each. Self-contained (no imports):
// `host/build.rs` includes this file too, to know which plugin crates to build and embed.
//
// Adding a built-in plugin: one entry here, the crate in the workspace (see
// docs/plugin-authors.md, "Adding a built-in plugin").

/// Where a starting setting comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromProcess {
    /// The variable's value; unset or empty leaves the setting out.
    Env(&'static str),
    /// Whether the variable is set to exactly this value.
    EnvIs(&'static str, &'static str),
    /// The process's own bearer token (a kubeconfig token or the in-cluster ServiceAccount
    /// token, read once at start), only when the variable is set to exactly this value.
    TokenWhen(&'static str, &'static str),
    /// The cluster's DNS domain as knative finds it: `cluster.local` when `/etc/resolv.conf`
    /// cannot be read, else the variable when set and not empty, else the `svc.<domain>` search
    /// entry of `/etc/resolv.conf`, else `cluster.local`.
    ClusterDomain(&'static str),
}

/// One built-in plugin.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The plugin's name (its manifest's) and the cargo package under `plugins/`.
    pub name: &'static str,
    /// Served by `run` unless `--no-default-plugins` is given.
    pub default: bool,
    /// Starting settings as (JSON pointer, source), refined by the plugins ConfigMap.
    pub settings: &'static [(&'static str, FromProcess)],
    /// The kinds whose webhooks stay served in the webhook-only profile (`ODH_PLATFORM_TYPE=xKS`).
    pub webhook_only_kinds: &'static [&'static str],
}

pub const BUILTINS: &[Builtin] = &[
    // Upstream registers the Pod webhook first. Like isvc's, it is not served in the
    // webhook-only profile (xKS): upstream's list there is LLMInferenceService only.
    Builtin {
        name: "pod-mutator",
        default: true,
        settings: &[("/podNamespace", FromProcess::Env("POD_NAMESPACE"))],
        webhook_only_kinds: &[],
    },
    // Upstream's NIMAccount webhook comes next; NIM_STATE=removed turns its controller into
    // the one-shot cleanup (spec nim-process §1.13, §2.6).
    Builtin {
        name: "nim-account",
        default: true,
        settings: &[
            ("/podNamespace", FromProcess::Env("POD_NAMESPACE")),
            ("/nimState", FromProcess::Env("NIM_STATE")),
        ],
        webhook_only_kinds: &[],
    },
    Builtin {
        name: "isvc",
        default: true,
        settings: &[
            ("/podNamespace", FromProcess::Env("POD_NAMESPACE")),
            (
                "/modelRegistry/enabled",
                FromProcess::EnvIs("MODELREGISTRY_STATE", "managed"),
            ),
            (
                "/modelRegistry/bearerToken",
                FromProcess::TokenWhen("MODELREGISTRY_STATE", "managed"),
            ),
            (
                "/clusterDomain",
                FromProcess::ClusterDomain("CLUSTER_DOMAIN"),
            ),
        ],
        webhook_only_kinds: &[],
    },
    // Upstream registers the LLMInferenceService webhooks after the InferenceGraph ones, and
    // they are the only webhooks of the webhook-only profile (xKS).
    Builtin {
        name: "llm-gateway",
        default: true,
        settings: &[
            ("/podNamespace", FromProcess::Env("POD_NAMESPACE")),
            ("/kuadrantNamespace", FromProcess::Env("KUADRANT_NAMESPACE")),
            ("/authAudience", FromProcess::Env("AUTH_AUDIENCE")),
            (
                "/gatewayLabelSelector",
                FromProcess::Env("GATEWAY_LABEL_SELECTOR"),
            ),
        ],
        webhook_only_kinds: &["LLMInferenceService"],
    },
    Builtin {
        name: "servingruntime",
        default: true,
        settings: &[
            ("/podNamespace", FromProcess::Env("POD_NAMESPACE")),
            (
                "/monitoringNamespace",
                FromProcess::Env("MONITORING_NAMESPACE"),
            ),
        ],
        webhook_only_kinds: &[],
    },
    Builtin {
        name: "storage",
        default: true,
        settings: &[],
        webhook_only_kinds: &[],
    },
];

/// What a built-in needs beyond the default limits and grants. An admin's plugins-ConfigMap
/// entry for a plugin of that name overrides these key by key.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    pub name: &'static str,
    /// Limits as (key of the ConfigMap entry's `limits`, value).
    pub limits: &'static [(&'static str, u64)],
    /// `grants.secureRandom`: real randomness, for keys.
    pub secure_random: bool,
}

pub const NEEDS: &[Needs] = &[Needs {
    // RSA-4096 keys made in the guest take seconds (docs/decisions.md).
    name: "servingruntime",
    limits: &[
        ("reconcileTimeoutMs", 60_000),
        ("reconcileBudgetMs", 120_000),
    ],
    secure_random: true,
}];

/// The leader-election Lease of the deployment (upstream's election ID, so a replica of the
/// Go controller and one of ours never lead at once during an upgrade).
pub const LEASE_NAME: &str = "odh-model-controller.opendatahub.io";

/// The process environment that picks the webhook-only profile, and its value.
pub const WEBHOOK_ONLY_PROFILE: (&str, &str) = ("ODH_PLATFORM_TYPE", "xKS");
