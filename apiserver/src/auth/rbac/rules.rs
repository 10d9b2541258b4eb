//! One RBAC policy rule, compiled once for matching on every request (kube-apiserver's
//! `RuleAllows`), and label-selector matching for ClusterRole aggregation.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::auth::attributes::Attributes;

/// A list of values where `*` matches everything; the wildcard is found once, not per request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Matcher {
    all: bool,
    values: Vec<String>,
}

impl Matcher {
    fn new(values: &[String]) -> Self {
        Matcher {
            all: values.iter().any(|v| v == "*"),
            values: values.to_vec(),
        }
    }

    fn matches(&self, value: &str) -> bool {
        self.all || self.values.iter().any(|v| v == value)
    }
}

/// A [`PolicyRule`] ready for matching.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rule {
    source: PolicyRule,
    verbs: Matcher,
    api_groups: Matcher,
    resources: Vec<String>,
    all_resources: bool,
    resource_names: Vec<String>,
    non_resource_urls: Vec<String>,
}

impl Rule {
    /// Compiles a policy rule.
    pub(crate) fn new(rule: &PolicyRule) -> Self {
        let resources = rule.resources.clone().unwrap_or_default();
        Rule {
            verbs: Matcher::new(&rule.verbs),
            api_groups: Matcher::new(rule.api_groups.as_deref().unwrap_or_default()),
            all_resources: resources.iter().any(|r| r == "*"),
            resources,
            resource_names: rule.resource_names.clone().unwrap_or_default(),
            non_resource_urls: rule.non_resource_urls.clone().unwrap_or_default(),
            source: rule.clone(),
        }
    }

    /// The rule as written.
    pub(crate) fn policy_rule(&self) -> &PolicyRule {
        &self.source
    }

    /// Whether the rule allows the request.
    pub(crate) fn allows(&self, attributes: &Attributes) -> bool {
        match attributes {
            Attributes::Resource(r) => {
                self.verbs.matches(&r.verb)
                    && self.api_groups.matches(&r.group)
                    && self.resource_matches(&r.resource, &r.subresource)
                    && (self.resource_names.is_empty() || self.resource_names.contains(&r.name))
            }
            Attributes::NonResource(n) => self.verbs.matches(&n.verb) && self.url_matches(&n.path),
        }
    }

    /// `*`, the exact `resource[/subresource]`, or `*/subresource`.
    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        if self.all_resources {
            return true;
        }
        self.resources.iter().any(|rule| {
            if subresource.is_empty() {
                return rule == resource;
            }
            match rule.split_once('/') {
                Some((r, s)) => s == subresource && (r == resource || r == "*"),
                None => false,
            }
        })
    }

    /// `*`, the exact path, or a prefix ending in `*`.
    fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|url| {
            url == "*"
                || url == path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    }
}

/// Whether `labels` match a Kubernetes label selector (`matchLabels` and `matchExpressions` with
/// `In`, `NotIn`, `Exists`, `DoesNotExist`). An empty selector matches everything, as in
/// `metav1.LabelSelectorAsSelector`; an unknown operator matches nothing.
pub(crate) fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> bool {
    let labels_ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_ok = selector.match_expressions.iter().flatten().all(|req| {
        let values = req.values.as_deref().unwrap_or_default();
        let value = labels.get(&req.key);
        match req.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_ok && expressions_ok
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Rule {
        let v = |s: &[&str]| Some(s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        Rule::new(&PolicyRule {
            verbs: verbs.iter().map(|x| x.to_string()).collect(),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: if names.is_empty() { None } else { v(names) },
            non_resource_urls: None,
        })
    }

    fn url_rule(verbs: &[&str], urls: &[&str]) -> Rule {
        Rule::new(&PolicyRule {
            verbs: verbs.iter().map(|x| x.to_string()).collect(),
            non_resource_urls: Some(urls.iter().map(|x| x.to_string()).collect()),
            ..PolicyRule::default()
        })
    }

    #[test]
    fn verbs_groups_resources() {
        let r = rule(&["get", "list"], &[""], &["configmaps"], &[]);
        assert!(r.allows(&Attributes::resource("get", "", "configmaps", "ns", "a")));
        assert!(r.allows(&Attributes::resource("list", "", "configmaps", "ns", "")));
        assert!(!r.allows(&Attributes::resource("delete", "", "configmaps", "ns", "a")));
        assert!(!r.allows(&Attributes::resource(
            "get",
            "apps",
            "configmaps",
            "ns",
            "a"
        )));
        assert!(!r.allows(&Attributes::resource("get", "", "secrets", "ns", "a")));
        assert!(!r.allows(
            &Attributes::resource("get", "", "configmaps", "ns", "a").with_subresource("status")
        ));
        let all = rule(&["*"], &["*"], &["*"], &[]);
        assert!(all.allows(
            &Attributes::resource("escalate", "x.io", "things", "", "").with_subresource("status")
        ));
    }

    #[test]
    fn subresources() {
        let r = rule(&["create"], &[""], &["serviceaccounts/token"], &[]);
        assert!(
            r.allows(
                &Attributes::resource("create", "", "serviceaccounts", "ns", "x")
                    .with_subresource("token")
            )
        );
        assert!(!r.allows(&Attributes::resource(
            "create",
            "",
            "serviceaccounts",
            "ns",
            "x"
        )));
        let star = rule(&["get"], &["*"], &["*/status"], &[]);
        assert!(
            star.allows(
                &Attributes::resource("get", "apps", "deployments", "ns", "d")
                    .with_subresource("status")
            )
        );
        assert!(
            !star.allows(
                &Attributes::resource("get", "apps", "deployments", "ns", "d")
                    .with_subresource("scale")
            )
        );
        assert!(!star.allows(&Attributes::resource(
            "get",
            "apps",
            "deployments",
            "ns",
            "d"
        )));
        let plain = rule(&["get"], &["apps"], &["deployments"], &[]);
        assert!(
            !plain.allows(
                &Attributes::resource("get", "apps", "deployments", "ns", "d")
                    .with_subresource("status")
            )
        );
    }

    #[test]
    fn resource_names_limit_named_requests_only() {
        let r = rule(&["get", "list"], &[""], &["secrets"], &["one"]);
        assert!(r.allows(&Attributes::resource("get", "", "secrets", "ns", "one")));
        assert!(!r.allows(&Attributes::resource("get", "", "secrets", "ns", "two")));
        // A list has no name, so a resourceNames rule never allows it.
        assert!(!r.allows(&Attributes::resource("list", "", "secrets", "ns", "")));
    }

    #[test]
    fn non_resource_urls() {
        let r = url_rule(&["get"], &["/healthz", "/apis/*"]);
        assert!(r.allows(&Attributes::non_resource("get", "/healthz")));
        assert!(!r.allows(&Attributes::non_resource("get", "/healthz/etcd")));
        assert!(r.allows(&Attributes::non_resource("get", "/apis/apps/v1")));
        assert!(r.allows(&Attributes::non_resource("get", "/apis/")));
        assert!(!r.allows(&Attributes::non_resource("get", "/apis")));
        assert!(!r.allows(&Attributes::non_resource("post", "/healthz")));
        assert!(url_rule(&["*"], &["*"]).allows(&Attributes::non_resource("access", "/")));
        // Resource rules never allow paths and URL rules never allow resources.
        assert!(
            !rule(&["*"], &["*"], &["*"], &[]).allows(&Attributes::non_resource("get", "/healthz"))
        );
        assert!(!url_rule(&["*"], &["*"]).allows(&Attributes::resource("get", "", "pods", "", "")));
    }

    #[test]
    fn label_selectors() {
        let labels: BTreeMap<String, String> = [("a".to_string(), "1".to_string())].into();
        let sel = |ml: &[(&str, &str)], ex: Vec<LabelSelectorRequirement>| LabelSelector {
            match_labels: Some(
                ml.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            match_expressions: Some(ex),
        };
        let req = |key: &str, op: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        };
        assert!(selector_matches(&LabelSelector::default(), &labels));
        assert!(selector_matches(&sel(&[("a", "1")], vec![]), &labels));
        assert!(!selector_matches(&sel(&[("a", "2")], vec![]), &labels));
        assert!(selector_matches(
            &sel(&[], vec![req("a", "In", &["1", "2"])]),
            &labels
        ));
        assert!(!selector_matches(
            &sel(&[], vec![req("a", "NotIn", &["1"])]),
            &labels
        ));
        assert!(selector_matches(
            &sel(&[], vec![req("b", "NotIn", &["1"])]),
            &labels
        ));
        assert!(selector_matches(
            &sel(&[], vec![req("a", "Exists", &[])]),
            &labels
        ));
        assert!(selector_matches(
            &sel(&[], vec![req("b", "DoesNotExist", &[])]),
            &labels
        ));
        assert!(!selector_matches(
            &sel(&[], vec![req("a", "Gt", &["0"])]),
            &labels
        ));
    }
}
