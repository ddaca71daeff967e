// The registration list: everything the host knows about each built-in plugin and about the
// deployment it runs in. Every product name of the host lives here; the crates below this one
// know none. Self-contained (no imports): `host/app/build.rs` includes this file too, to know
// which plugin crates to build and embed.
//
// Adding a built-in plugin: its crate under `plugins/`, the workspace member, and one entry
// here (docs/plugin-authors.md, "Adding a built-in plugin"); `make deploy-manifests` then
// regenerates the RBAC and webhook manifests from its manifest and this entry.

/// Where a starting setting comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromProcess {
    /// The variable's value; unset or empty leaves the setting out.
    Env(&'static str),
    /// Whether the variable is set to exactly this value.
    EnvIs(&'static str, &'static str),
    /// The cluster's DNS domain as knative finds it: `cluster.local` when `/etc/resolv.conf`
    /// cannot be read, else the variable when set and not empty, else the `svc.<domain>` search
    /// entry of `/etc/resolv.conf`, else `cluster.local`.
    ClusterDomain(&'static str),
}

/// How one webhook path of a plugin is registered with the apiserver (upstream's kustomize
/// output, so an upgrade in place finds the same entries). A path not listed gets a name
/// derived from the path and the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Webhook {
    pub path: &'static str,
    pub name: &'static str,
    /// `None` or `NoneOnDryRun`.
    pub side_effects: &'static str,
}

/// What a plugin's writes need beyond the kinds themselves: the apiserver refuses a RoleBinding
/// to a role whose permissions the writer lacks unless it may `bind` that role, and a Role with
/// rules the writer does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RbacNeeds {
    /// Roles its RoleBindings/ClusterRoleBindings refer to, as (kind, name): granted `bind`
    /// on exactly these names (the roles may be defined by someone else, with any rules).
    pub binds: &'static [(&'static str, &'static str)],
    /// Rules of the Roles it writes, as (group, resources, verbs, reason): the host must hold
    /// them to create such a Role.
    pub holds: &'static [(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static str,
    )],
}

impl RbacNeeds {
    pub const NONE: RbacNeeds = RbacNeeds {
        binds: &[],
        holds: &[],
    };
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
    /// The kinds whose webhooks stay served in the webhook-only profile.
    pub webhook_only_kinds: &'static [&'static str],
    /// Its webhooks' registrations, where upstream names them.
    pub webhooks: &'static [Webhook],
    /// What its writes need in the ClusterRole beyond its kinds.
    pub rbac: RbacNeeds,
    /// Limits beyond the defaults, as (key of the ConfigMap entry's `limits`, value).
    pub limits: &'static [(&'static str, u64)],
    /// `grants.secureRandom`: real randomness, for keys.
    pub secure_random: bool,
    /// `grants.serviceAccountNamespaces`: the namespaces whose Services may receive the
    /// controller's identity when the plugin asks for it (never the token itself).
    pub service_account_namespaces: &'static [&'static str],
    /// `grants.foreignWrites` as (group, version, kind): kinds whose objects it may change
    /// whoever manages them, where upstream's code does (a user's Secret annotation, the Go
    /// controller's legacy roles).
    pub foreign_writes: &'static [(&'static str, &'static str, &'static str)],
    /// Its API routes are what the standalone `model-serving-api` serves by default.
    pub model_serving_api: bool,
}

impl Builtin {
    /// An entry with nothing but its name: the other fields are spelled out where they differ.
    pub const fn named(name: &'static str) -> Builtin {
        Builtin {
            name,
            default: true,
            settings: &[],
            webhook_only_kinds: &[],
            webhooks: &[],
            rbac: RbacNeeds::NONE,
            limits: &[],
            secure_random: false,
            service_account_namespaces: &[],
            foreign_writes: &[],
            model_serving_api: false,
        }
    }
}

/// Every built-in plugin, in the order upstream registers their webhooks.
pub const BUILTINS: &[Builtin] = &[
    // Upstream registers the Pod webhook first. Like isvc's, it is not served in the
    // webhook-only profile (xKS): upstream's list there is LLMInferenceService only.
    Builtin {
        settings: &[("/podNamespace", FromProcess::Env("POD_NAMESPACE"))],
        webhooks: &[Webhook {
            path: "/mutate--v1-pod",
            name: "mutating.pod.odh-model-controller.opendatahub.io",
            side_effects: "None",
        }],
        ..Builtin::named("pod-mutator")
    },
    // Upstream's NIMAccount webhook comes next; NIM_STATE=removed turns its controller into
    // the one-shot cleanup (docs/plugins/nim-account.md).
    Builtin {
        settings: &[
            ("/podNamespace", FromProcess::Env("POD_NAMESPACE")),
            ("/nimState", FromProcess::Env("NIM_STATE")),
        ],
        webhooks: &[Webhook {
            path: "/validate-nim-opendatahub-io-v1-account",
            name: "validating.nim.account.odh-model-controller.opendatahub.io",
            side_effects: "None",
        }],
        // Upstream removes the force-validation annotation from the user's API-key Secret.
        foreign_writes: &[("", "v1", "Secret")],
        ..Builtin::named("nim-account")
    },
    Builtin {
        settings: &[
            ("/podNamespace", FromProcess::Env("POD_NAMESPACE")),
            (
                "/modelRegistry/enabled",
                FromProcess::EnvIs("MODELREGISTRY_STATE", "managed"),
            ),
            (
                "/clusterDomain",
                FromProcess::ClusterDomain("CLUSTER_DOMAIN"),
            ),
        ],
        webhooks: &[
            Webhook {
                path: "/mutate-serving-kserve-io-v1beta1-inferenceservice",
                name: "minferenceservice-v1beta1.odh-model-controller.opendatahub.io",
                side_effects: "NoneOnDryRun",
            },
            Webhook {
                path: "/validate-serving-kserve-io-v1beta1-inferenceservice",
                name: "validating.isvc.odh-model-controller.opendatahub.io",
                side_effects: "None",
            },
            Webhook {
                path: "/mutate-serving-kserve-io-v1alpha1-inferencegraph",
                name: "minferencegraph-v1alpha1.odh-model-controller.opendatahub.io",
                side_effects: "None",
            },
            Webhook {
                path: "/validate-serving-kserve-io-v1alpha1-inferencegraph",
                name: "vinferencegraph-v1alpha1.odh-model-controller.opendatahub.io",
                side_effects: "None",
            },
        ],
        rbac: RbacNeeds {
            binds: &[("ClusterRole", "system:auth-delegator")],
            holds: &[
                (
                    "",
                    &["pods"],
                    &["get"],
                    "the KEDA Role inference-prometheus-auth",
                ),
                (
                    "metrics.k8s.io",
                    &["nodes", "pods"],
                    &["get", "list", "watch"],
                    "the KEDA Role inference-prometheus-auth",
                ),
            ],
        },
        // Where the Model Registry operator puts the registries (its default namespaces in
        // ODH and RHOAI): the Model Registry sync authenticates as the controller there only.
        service_account_namespaces: &["odh-model-registries", "rhoai-model-registries"],
        ..Builtin::named("isvc")
    },
    // Upstream registers the LLMInferenceService webhooks after the InferenceGraph ones, and
    // they are the only webhooks of the webhook-only profile (xKS).
    Builtin {
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
        webhooks: &[
            Webhook {
                path: "/mutate-serving-kserve-io-v1alpha1-llminferenceservice",
                name: "connection-llmisvc-v1alpha1.odh-model-controller.opendatahub.io",
                side_effects: "NoneOnDryRun",
            },
            Webhook {
                path: "/mutate-serving-kserve-io-v1alpha2-llminferenceservice",
                name: "connection-llmisvc-v1alpha2.odh-model-controller.opendatahub.io",
                side_effects: "NoneOnDryRun",
            },
        ],
        model_serving_api: true,
        // Upstream deletes by label and name whoever made them: the Gateway's objects labelled
        // as ours, the MaaS cleanup's legacy roles.
        foreign_writes: &[
            ("networking.istio.io", "v1alpha3", "EnvoyFilter"),
            ("kuadrant.io", "v1", "AuthPolicy"),
            ("monitoring.coreos.com", "v1", "PodMonitor"),
            ("rbac.authorization.k8s.io", "v1", "Role"),
            ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
        ],
        ..Builtin::named("llm-gateway")
    },
    Builtin {
        settings: &[
            ("/podNamespace", FromProcess::Env("POD_NAMESPACE")),
            (
                "/monitoringNamespace",
                FromProcess::Env("MONITORING_NAMESPACE"),
            ),
        ],
        rbac: RbacNeeds {
            binds: &[("ClusterRole", "prometheus-ns-access")],
            holds: &[],
        },
        // RSA-4096 keys made in the guest take seconds (docs/decisions.md).
        limits: &[
            ("reconcileTimeoutMs", 60_000),
            ("reconcileBudgetMs", 120_000),
        ],
        secure_random: true,
        ..Builtin::named("servingruntime")
    },
    Builtin::named("storage"),
];

/// The names the deployment gives what it creates and registers (upstream's, so a replica of
/// the Go controller and one of ours find the same objects during an upgrade).
#[derive(Debug, Clone, Copy)]
pub struct Deployment {
    /// The namespace the manifests name (kustomize's `namespace:` moves everything elsewhere).
    pub namespace: &'static str,
    pub service_account: &'static str,
    pub cluster_role: &'static str,
    pub cluster_role_binding: &'static str,
    /// The Role (and its binding) in the controller's own namespace.
    pub role: &'static str,
    pub role_binding: &'static str,
    pub webhook_service: &'static str,
    pub mutating_configuration: &'static str,
    pub validating_configuration: &'static str,
    /// Suffix of the names derived for webhooks no entry names.
    pub plugin_webhook_domain: &'static str,
    /// The leader-election Lease (upstream's election ID, so a Go replica and one of ours
    /// never lead at once).
    pub lease_name: &'static str,
    /// Labels marking the platform's control-plane namespaces: no webhook of a plugin added at
    /// run time is called in a namespace carrying one (OpenShift's `openshift-*` control plane;
    /// a selector cannot match a name prefix).
    pub control_plane_namespace_labels: &'static [&'static str],
}

pub const DEPLOYMENT: Deployment = Deployment {
    namespace: "opendatahub",
    service_account: "odh-model-controller",
    cluster_role: "odh-model-controller-role",
    cluster_role_binding: "odh-model-controller-rolebinding-opendatahub",
    role: "leader-election-role",
    role_binding: "leader-election-rolebinding",
    webhook_service: "odh-model-controller-webhook-service",
    mutating_configuration: "mutating.odh-model-controller.opendatahub.io",
    validating_configuration: "validating.odh-model-controller.opendatahub.io",
    plugin_webhook_domain: "plugins.odh-model-controller.opendatahub.io",
    lease_name: "odh-model-controller.opendatahub.io",
    control_plane_namespace_labels: &["openshift.io/run-level"],
};

/// The webhook-only profile: the process environment that picks it (variable, value) and the
/// directory of its generated manifests under `deploy/`.
pub const WEBHOOK_ONLY_PROFILE: (&str, &str) = ("ODH_PLATFORM_TYPE", "xKS");
pub const WEBHOOK_ONLY_DEPLOY_DIR: &str = "generated/xks";
