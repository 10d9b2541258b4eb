//! The clusters the simulated cluster provider serves and the ClusterRequests each is granted to,
//! indexed both ways: every grant and every release looks a request up by uid, and a scan over
//! all clusters made a burst of thousands of tenants quadratic.

use std::collections::{BTreeSet, HashMap};

use super::{ObjKey, Sharing};
use crate::dev::hosting::ClusterHandle;

/// A cluster the simulated cluster provider serves, with the ClusterRequests holding it. This
/// in-memory record is authoritative for scheduling (the Cluster object's finalizers mirror
/// it), so that concurrent requests never overfill a shared cluster.
pub(crate) struct Hosted {
    pub handle: ClusterHandle,
    pub purpose: String,
    pub sharing: Sharing,
    /// uids of the ClusterRequests the cluster is granted to; changed only through
    /// [`HostedClusters`], which keeps its index in step.
    requests: BTreeSet<String>,
    /// The Cluster object is being deleted: it takes no new requests.
    pub deleting: bool,
    /// Created at start (platform, onboarding): never deleted by the scheduler.
    pub fixed: bool,
    /// Order of serving, for stable choices; given by [`HostedClusters::insert`].
    seq: u64,
}

impl Hosted {
    /// A cluster no request holds yet.
    pub(crate) fn new(handle: ClusterHandle, purpose: &str, sharing: Sharing, fixed: bool) -> Self {
        Hosted {
            handle,
            purpose: purpose.into(),
            sharing,
            requests: BTreeSet::new(),
            deleting: false,
            fixed,
            seq: 0,
        }
    }

    /// uids of the ClusterRequests the cluster is granted to.
    pub(crate) fn requests(&self) -> &BTreeSet<String> {
        &self.requests
    }

    /// Order of serving: a cluster served earlier has a smaller number.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }
}

/// Every hosted cluster by Cluster object, and the cluster each ClusterRequest uid holds.
#[derive(Default)]
pub(crate) struct HostedClusters {
    clusters: HashMap<ObjKey, Hosted>,
    by_request: HashMap<String, ObjKey>,
    /// The `seq` of the next cluster served.
    next_seq: u64,
}

impl HostedClusters {
    pub(crate) fn get(&self, cluster: &ObjKey) -> Option<&Hosted> {
        self.clusters.get(cluster)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&ObjKey, &Hosted)> {
        self.clusters.iter()
    }

    /// Serves `cluster`, granted to `requests`; a cluster served before under the same key is
    /// replaced, with the requests it held.
    pub(crate) fn insert(
        &mut self,
        cluster: ObjKey,
        mut hosted: Hosted,
        requests: impl IntoIterator<Item = String>,
    ) {
        self.remove(&cluster);
        hosted.seq = self.next_seq;
        self.next_seq += 1;
        self.clusters.insert(cluster.clone(), hosted);
        for uid in requests {
            self.grant(&cluster, uid);
        }
    }

    /// Stops serving `cluster`; the requests it held hold nothing.
    pub(crate) fn remove(&mut self, cluster: &ObjKey) -> Option<Hosted> {
        let hosted = self.clusters.remove(cluster)?;
        for uid in &hosted.requests {
            self.unindex(cluster, uid);
        }
        Some(hosted)
    }

    /// The cluster granted to the ClusterRequest `uid`.
    pub(crate) fn holding(&self, uid: &str) -> Option<&ObjKey> {
        self.by_request.get(uid)
    }

    /// Grants `cluster` to the request `uid`; false when the cluster is not served.
    pub(crate) fn grant(&mut self, cluster: &ObjKey, uid: String) -> bool {
        let Some(hosted) = self.clusters.get_mut(cluster) else {
            return false;
        };
        hosted.requests.insert(uid.clone());
        self.by_request.insert(uid, cluster.clone());
        true
    }

    /// Takes `cluster` back from the request `uid`; the cluster, if served.
    pub(crate) fn release(&mut self, cluster: &ObjKey, uid: &str) -> Option<&mut Hosted> {
        self.unindex(cluster, uid);
        let hosted = self.clusters.get_mut(cluster)?;
        hosted.requests.remove(uid);
        Some(hosted)
    }

    fn unindex(&mut self, cluster: &ObjKey, uid: &str) {
        if self.by_request.get(uid) == Some(cluster) {
            self.by_request.remove(uid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_is_found_by_uid_until_released_or_its_cluster_goes() {
        let handle = ClusterHandle::start_dedicated("hosted")
            .await
            .expect("an embedded cluster starts");
        let hosted = || Hosted::new(handle.clone(), "mcp", Sharing::Shared(0), false);
        let (a, b) = (ObjKey::new("ns", "a"), ObjKey::new("ns", "b"));
        let mut all = HostedClusters::default();
        all.insert(a.clone(), hosted(), ["u1".to_string()]);
        all.insert(b.clone(), hosted(), []);
        assert!(all.grant(&b, "u2".into()));
        assert!(!all.grant(&ObjKey::new("ns", "gone"), "u3".into()));
        assert_eq!(all.holding("u1"), Some(&a));
        assert_eq!(all.holding("u2"), Some(&b));
        assert_eq!(all.holding("u3"), None);

        let b_after = all.release(&b, "u2").expect("b is served");
        assert!(b_after.requests().is_empty());
        assert_eq!(all.holding("u2"), None);

        all.remove(&a);
        assert_eq!(all.holding("u1"), None);
        assert!(all.get(&a).is_none());
    }
}
