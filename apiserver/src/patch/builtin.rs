//! Patch merge keys, strategies and server-side-apply list/map semantics of the built-in types.
//!
//! k8s-openapi's schemas do not carry Kubernetes' `x-kubernetes-*` extensions, so this table restores
//! them. It is the extensions that Kubernetes v1.35's published OpenAPI definitions put on the types the
//! embedded server serves (namespaces, secrets, configmaps, serviceaccounts, events, leases, RBAC,
//! token reviews/requests, CRDs, services, deployments and the pod template they embed), i.e. the Go
//! struct tags `patchStrategy`/`patchMergeKey` and the `+listType`/`+listMapKey`/`+mapType` markers.
//! Two entries are not in the published document but in kube-apiserver's own schema: the `TCP`
//! defaults of the `protocol` key of container and service ports, which server-side apply uses when a
//! port omits its protocol.
//!
//! Rows are `(definition without the "io.k8s." prefix, property or "." for the type itself, spec)`,
//! sorted, where spec is `;`-separated `list=atomic|set|map:<keys>`, `map=atomic`,
//! `patch=<strategy>`, `key=<merge key>`, `default=<string>`. Regenerate by reading the
//! definitions' extensions from the Kubernetes OpenAPI document and keeping the reachable ones.

/// The table; see the module docs for the format.
#[rustfmt::skip]
pub(crate) const TABLE: &[(&str, &str, &str)] = &[
    ("api.apps.v1.DeploymentSpec", "strategy", "patch=retainKeys"),
    ("api.apps.v1.DeploymentStatus", "conditions", "list=map:type;patch=merge;key=type"),
    ("api.authentication.v1.TokenRequestSpec", "audiences", "list=atomic"),
    ("api.authentication.v1.TokenReviewSpec", "audiences", "list=atomic"),
    ("api.authentication.v1.TokenReviewStatus", "audiences", "list=atomic"),
    ("api.authentication.v1.UserInfo", "groups", "list=atomic"),
    ("api.core.v1.Capabilities", "add", "list=atomic"),
    ("api.core.v1.Capabilities", "drop", "list=atomic"),
    ("api.core.v1.CephFSVolumeSource", "monitors", "list=atomic"),
    ("api.core.v1.ConfigMapKeySelector", ".", "map=atomic"),
    ("api.core.v1.ConfigMapProjection", "items", "list=atomic"),
    ("api.core.v1.ConfigMapVolumeSource", "items", "list=atomic"),
    ("api.core.v1.Container", "args", "list=atomic"),
    ("api.core.v1.Container", "command", "list=atomic"),
    ("api.core.v1.Container", "env", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.Container", "envFrom", "list=atomic"),
    ("api.core.v1.Container", "ports", "list=map:containerPort,protocol;patch=merge;key=containerPort"),
    ("api.core.v1.Container", "resizePolicy", "list=atomic"),
    ("api.core.v1.Container", "restartPolicyRules", "list=atomic"),
    ("api.core.v1.Container", "volumeDevices", "list=map:devicePath;patch=merge;key=devicePath"),
    ("api.core.v1.Container", "volumeMounts", "list=map:mountPath;patch=merge;key=mountPath"),
    ("api.core.v1.ContainerPort", "protocol", "default=TCP"),
    ("api.core.v1.ContainerRestartRuleOnExitCodes", "values", "list=set"),
    ("api.core.v1.ContainerStatus", "allocatedResourcesStatus", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.ContainerStatus", "volumeMounts", "list=map:mountPath;patch=merge;key=mountPath"),
    ("api.core.v1.DownwardAPIProjection", "items", "list=atomic"),
    ("api.core.v1.DownwardAPIVolumeSource", "items", "list=atomic"),
    ("api.core.v1.EphemeralContainer", "args", "list=atomic"),
    ("api.core.v1.EphemeralContainer", "command", "list=atomic"),
    ("api.core.v1.EphemeralContainer", "env", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.EphemeralContainer", "envFrom", "list=atomic"),
    ("api.core.v1.EphemeralContainer", "ports", "list=map:containerPort,protocol;patch=merge;key=containerPort"),
    ("api.core.v1.EphemeralContainer", "resizePolicy", "list=atomic"),
    ("api.core.v1.EphemeralContainer", "restartPolicyRules", "list=atomic"),
    ("api.core.v1.EphemeralContainer", "volumeDevices", "list=map:devicePath;patch=merge;key=devicePath"),
    ("api.core.v1.EphemeralContainer", "volumeMounts", "list=map:mountPath;patch=merge;key=mountPath"),
    ("api.core.v1.ExecAction", "command", "list=atomic"),
    ("api.core.v1.FCVolumeSource", "targetWWNs", "list=atomic"),
    ("api.core.v1.FCVolumeSource", "wwids", "list=atomic"),
    ("api.core.v1.FileKeySelector", ".", "map=atomic"),
    ("api.core.v1.HTTPGetAction", "httpHeaders", "list=atomic"),
    ("api.core.v1.HostAlias", "hostnames", "list=atomic"),
    ("api.core.v1.ISCSIVolumeSource", "portals", "list=atomic"),
    ("api.core.v1.LinuxContainerUser", "supplementalGroups", "list=atomic"),
    ("api.core.v1.LoadBalancerIngress", "ports", "list=atomic"),
    ("api.core.v1.LoadBalancerStatus", "ingress", "list=atomic"),
    ("api.core.v1.LocalObjectReference", ".", "map=atomic"),
    ("api.core.v1.NamespaceSpec", "finalizers", "list=atomic"),
    ("api.core.v1.NamespaceStatus", "conditions", "list=map:type;patch=merge;key=type"),
    ("api.core.v1.NodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "list=atomic"),
    ("api.core.v1.NodeSelector", ".", "map=atomic"),
    ("api.core.v1.NodeSelector", "nodeSelectorTerms", "list=atomic"),
    ("api.core.v1.NodeSelectorRequirement", "values", "list=atomic"),
    ("api.core.v1.NodeSelectorTerm", ".", "map=atomic"),
    ("api.core.v1.NodeSelectorTerm", "matchExpressions", "list=atomic"),
    ("api.core.v1.NodeSelectorTerm", "matchFields", "list=atomic"),
    ("api.core.v1.ObjectFieldSelector", ".", "map=atomic"),
    ("api.core.v1.ObjectReference", ".", "map=atomic"),
    ("api.core.v1.PersistentVolumeClaimSpec", "accessModes", "list=atomic"),
    ("api.core.v1.PodAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "list=atomic"),
    ("api.core.v1.PodAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "list=atomic"),
    ("api.core.v1.PodAffinityTerm", "matchLabelKeys", "list=atomic"),
    ("api.core.v1.PodAffinityTerm", "mismatchLabelKeys", "list=atomic"),
    ("api.core.v1.PodAffinityTerm", "namespaces", "list=atomic"),
    ("api.core.v1.PodAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "list=atomic"),
    ("api.core.v1.PodAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "list=atomic"),
    ("api.core.v1.PodDNSConfig", "nameservers", "list=atomic"),
    ("api.core.v1.PodDNSConfig", "options", "list=atomic"),
    ("api.core.v1.PodDNSConfig", "searches", "list=atomic"),
    ("api.core.v1.PodExtendedResourceClaimStatus", "requestMappings", "list=atomic"),
    ("api.core.v1.PodSecurityContext", "supplementalGroups", "list=atomic"),
    ("api.core.v1.PodSecurityContext", "sysctls", "list=atomic"),
    ("api.core.v1.PodSpec", "containers", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.PodSpec", "ephemeralContainers", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.PodSpec", "hostAliases", "list=map:ip;patch=merge;key=ip"),
    ("api.core.v1.PodSpec", "imagePullSecrets", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.PodSpec", "initContainers", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.PodSpec", "nodeSelector", "map=atomic"),
    ("api.core.v1.PodSpec", "readinessGates", "list=atomic"),
    ("api.core.v1.PodSpec", "resourceClaims", "list=map:name;patch=merge,retainKeys;key=name"),
    ("api.core.v1.PodSpec", "schedulingGates", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.PodSpec", "tolerations", "list=atomic"),
    ("api.core.v1.PodSpec", "topologySpreadConstraints", "list=map:topologyKey,whenUnsatisfiable;patch=merge;key=topologyKey"),
    ("api.core.v1.PodSpec", "volumes", "list=map:name;patch=merge,retainKeys;key=name"),
    ("api.core.v1.PodStatus", "conditions", "list=map:type;patch=merge;key=type"),
    ("api.core.v1.PodStatus", "containerStatuses", "list=atomic"),
    ("api.core.v1.PodStatus", "ephemeralContainerStatuses", "list=atomic"),
    ("api.core.v1.PodStatus", "hostIPs", "list=atomic;patch=merge;key=ip"),
    ("api.core.v1.PodStatus", "initContainerStatuses", "list=atomic"),
    ("api.core.v1.PodStatus", "podIPs", "list=map:ip;patch=merge;key=ip"),
    ("api.core.v1.PodStatus", "resourceClaimStatuses", "list=map:name;patch=merge,retainKeys;key=name"),
    ("api.core.v1.ProjectedVolumeSource", "sources", "list=atomic"),
    ("api.core.v1.RBDVolumeSource", "monitors", "list=atomic"),
    ("api.core.v1.ResourceFieldSelector", ".", "map=atomic"),
    ("api.core.v1.ResourceRequirements", "claims", "list=map:name"),
    ("api.core.v1.ResourceStatus", "resources", "list=map:resourceID"),
    ("api.core.v1.SecretKeySelector", ".", "map=atomic"),
    ("api.core.v1.SecretProjection", "items", "list=atomic"),
    ("api.core.v1.SecretVolumeSource", "items", "list=atomic"),
    ("api.core.v1.ServiceAccount", "imagePullSecrets", "list=atomic"),
    ("api.core.v1.ServiceAccount", "secrets", "list=map:name;patch=merge;key=name"),
    ("api.core.v1.ServicePort", "protocol", "default=TCP"),
    ("api.core.v1.ServiceSpec", "clusterIPs", "list=atomic"),
    ("api.core.v1.ServiceSpec", "externalIPs", "list=atomic"),
    ("api.core.v1.ServiceSpec", "ipFamilies", "list=atomic"),
    ("api.core.v1.ServiceSpec", "loadBalancerSourceRanges", "list=atomic"),
    ("api.core.v1.ServiceSpec", "ports", "list=map:port,protocol;patch=merge;key=port"),
    ("api.core.v1.ServiceSpec", "selector", "map=atomic"),
    ("api.core.v1.ServiceStatus", "conditions", "list=map:type;patch=merge;key=type"),
    ("api.core.v1.TopologySpreadConstraint", "matchLabelKeys", "list=atomic"),
    ("api.core.v1.TypedLocalObjectReference", ".", "map=atomic"),
    ("api.rbac.v1.AggregationRule", "clusterRoleSelectors", "list=atomic"),
    ("api.rbac.v1.ClusterRole", "rules", "list=atomic"),
    ("api.rbac.v1.ClusterRoleBinding", "subjects", "list=atomic"),
    ("api.rbac.v1.PolicyRule", "apiGroups", "list=atomic"),
    ("api.rbac.v1.PolicyRule", "nonResourceURLs", "list=atomic"),
    ("api.rbac.v1.PolicyRule", "resourceNames", "list=atomic"),
    ("api.rbac.v1.PolicyRule", "resources", "list=atomic"),
    ("api.rbac.v1.PolicyRule", "verbs", "list=atomic"),
    ("api.rbac.v1.Role", "rules", "list=atomic"),
    ("api.rbac.v1.RoleBinding", "subjects", "list=atomic"),
    ("api.rbac.v1.RoleRef", ".", "map=atomic"),
    ("api.rbac.v1.Subject", ".", "map=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames", "categories", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames", "shortNames", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec", "versions", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus", "conditions", "list=map:type"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus", "storedVersions", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion", "additionalPrinterColumns", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion", "selectableFields", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "allOf", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "anyOf", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "enum", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "oneOf", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "required", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "x-kubernetes-list-map-keys", "list=atomic"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "x-kubernetes-validations", "list=map:rule;patch=merge;key=rule"),
    ("apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookConversion", "conversionReviewVersions", "list=atomic"),
    ("apimachinery.pkg.apis.meta.v1.LabelSelector", ".", "map=atomic"),
    ("apimachinery.pkg.apis.meta.v1.LabelSelector", "matchExpressions", "list=atomic"),
    ("apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", "values", "list=atomic"),
    ("apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "list=set;patch=merge"),
    ("apimachinery.pkg.apis.meta.v1.ObjectMeta", "managedFields", "list=atomic"),
    ("apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "list=map:uid;patch=merge;key=uid"),
    ("apimachinery.pkg.apis.meta.v1.OwnerReference", ".", "map=atomic"),
];

/// The spec string for `(definition, field)`, if the table has one.
pub(crate) fn lookup(definition: &str, field: &str) -> Option<&'static str> {
    let def = definition.strip_prefix("io.k8s.").unwrap_or(definition);
    TABLE
        .binary_search_by(|(d, f, _)| (*d, *f).cmp(&(def, field)))
        .ok()
        .map(|i| TABLE[i].2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(
            TABLE
                .windows(2)
                .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1))
        );
    }

    #[test]
    fn looks_up_the_merge_keys_kubernetes_declares() {
        assert_eq!(
            lookup("io.k8s.api.core.v1.PodSpec", "containers"),
            Some("list=map:name;patch=merge;key=name")
        );
        assert_eq!(
            lookup("io.k8s.api.core.v1.Container", "ports"),
            Some("list=map:containerPort,protocol;patch=merge;key=containerPort")
        );
        assert_eq!(
            lookup(
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                "finalizers"
            ),
            Some("list=set;patch=merge")
        );
        assert_eq!(
            lookup("io.k8s.api.rbac.v1.Role", "rules"),
            Some("list=atomic")
        );
        assert_eq!(lookup("io.k8s.api.core.v1.PodSpec", "nonexistent"), None);
    }
}
