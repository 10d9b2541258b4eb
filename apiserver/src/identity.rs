//! Who is making a request: the authenticated user as authentication hands it to authorization,
//! admission and the `TokenReview`/`SelfSubjectReview` answers.

use std::collections::BTreeMap;

/// An authenticated identity, as `user.Info` in kube-apiserver.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// User name, e.g. `admin` or `system:serviceaccount:ns:name`.
    pub name: String,
    /// User uid (ServiceAccounts: the SA's uid).
    pub uid: String,
    /// Groups, e.g. `system:masters`, `system:authenticated`.
    pub groups: Vec<String>,
    /// Extra attributes (kcp: `authentication.kubernetes.io/cluster-name`, …).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The cluster administrator of an embedded cluster (member of `system:masters`).
    pub fn admin() -> Self {
        UserInfo {
            name: "kubernetes-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            extra: BTreeMap::new(),
        }
    }

    /// The identity in-process controllers act as.
    pub fn system_controller(name: &str) -> Self {
        UserInfo {
            name: format!("system:serviceaccount:kube-system:{name}"),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            extra: BTreeMap::new(),
        }
    }

    /// Anonymous requests (no credentials).
    pub fn anonymous() -> Self {
        UserInfo {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
            extra: BTreeMap::new(),
        }
    }

    /// Is the user a member of `system:masters` (bypasses authorization, as in kube-apiserver)?
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }
}
