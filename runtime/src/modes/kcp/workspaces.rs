//! Which consumer workspaces are engaged, which objects each holds, and which object serves each.
//!
//! A workspace is engaged from the moment one of its APIBindings to the export is `Ready` until
//! the last of them is gone (a binding that stops being Ready keeps it engaged, as in kcp's
//! multicluster-provider: a passing hiccup must not tear a tenant down). Objects are indexed per
//! logical cluster, so engaging a workspace, or the departure of the object that served it,
//! touches that workspace's objects only — never a scan of every tenant.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::tenant::Identity;

/// One workspace's engagement: the Ready bindings and the endpoint they were seen on.
#[derive(Clone, Debug)]
struct Engagement {
    endpoint: Arc<str>,
    bindings: BTreeSet<String>,
}

/// The registry. Not synchronised: the source keeps it behind a lock.
#[derive(Debug, Default)]
pub struct Workspaces {
    engaged: HashMap<String, Engagement>,
    /// `(namespace, name)` of the objects in each logical cluster.
    objects: HashMap<String, HashSet<(String, String)>>,
    /// The virtual-workspace endpoint each logical cluster was last seen on.
    home: HashMap<String, Arc<str>>,
    /// The object that serves each workspace (one per workspace).
    owners: HashMap<String, Identity>,
}

impl Workspaces {
    /// Records Ready binding `binding` of `cluster`, seen on `endpoint`; true when this engaged
    /// the workspace.
    pub fn engage(&mut self, cluster: &str, binding: &str, endpoint: &Arc<str>) -> bool {
        self.home.insert(cluster.to_owned(), endpoint.clone());
        match self.engaged.get_mut(cluster) {
            Some(e) => {
                e.endpoint = endpoint.clone();
                e.bindings.insert(binding.to_owned());
                false
            }
            None => {
                self.engaged.insert(
                    cluster.to_owned(),
                    Engagement {
                        endpoint: endpoint.clone(),
                        bindings: BTreeSet::from([binding.to_owned()]),
                    },
                );
                true
            }
        }
    }

    /// Binding `binding` of `cluster` is gone; true when it was the last one (the workspace is
    /// disengaged).
    pub fn disengage(&mut self, cluster: &str, binding: &str) -> bool {
        let Some(e) = self.engaged.get_mut(cluster) else {
            return false;
        };
        e.bindings.remove(binding);
        if e.bindings.is_empty() {
            self.engaged.remove(cluster);
            true
        } else {
            false
        }
    }

    /// Every workspace engaged through `endpoint`.
    pub fn engaged_through(&self, endpoint: &str) -> Vec<String> {
        self.engaged
            .iter()
            .filter(|(_, e)| &*e.endpoint == endpoint)
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// Forgets the engagement of `cluster` altogether; true when it was engaged.
    pub fn drop_engagement(&mut self, cluster: &str) -> bool {
        self.engaged.remove(cluster).is_some()
    }

    /// Whether `cluster` is engaged.
    pub fn is_engaged(&self, cluster: &str) -> bool {
        self.engaged.contains_key(cluster)
    }

    /// How many workspaces are engaged.
    pub fn engaged_count(&self) -> usize {
        self.engaged.len()
    }

    /// The endpoint `cluster` was last seen on.
    pub fn home(&self, cluster: &str) -> Option<Arc<str>> {
        self.home.get(cluster).cloned()
    }

    /// Records object `id`, seen on `endpoint`.
    pub fn add_object(&mut self, id: &Identity, endpoint: &Arc<str>) {
        let Some(cluster) = &id.cluster else { return };
        self.home.insert(cluster.clone(), endpoint.clone());
        self.objects
            .entry(cluster.clone())
            .or_default()
            .insert((id.namespace.clone(), id.name.clone()));
    }

    /// Object `id` is gone.
    pub fn remove_object(&mut self, id: &Identity) {
        let Some(cluster) = &id.cluster else { return };
        if let Some(set) = self.objects.get_mut(cluster) {
            set.remove(&(id.namespace.clone(), id.name.clone()));
            if set.is_empty() {
                self.objects.remove(cluster);
                if !self.engaged.contains_key(cluster) && !self.owners.contains_key(cluster) {
                    self.home.remove(cluster);
                }
            }
        }
    }

    /// The objects of `cluster`.
    pub fn objects(&self, cluster: &str) -> Vec<Identity> {
        self.objects
            .get(cluster)
            .into_iter()
            .flatten()
            .map(|(namespace, name)| Identity {
                cluster: Some(cluster.to_owned()),
                namespace: namespace.clone(),
                name: name.clone(),
            })
            .collect()
    }

    /// How many objects are indexed.
    pub fn object_count(&self) -> usize {
        self.objects.values().map(HashSet::len).sum()
    }

    /// The object serving `cluster`.
    pub fn owner(&self, cluster: &str) -> Option<&Identity> {
        self.owners.get(cluster)
    }

    /// `id` serves its workspace.
    pub fn set_owner(&mut self, id: &Identity) {
        if let Some(cluster) = &id.cluster {
            self.owners.insert(cluster.clone(), id.clone());
        }
    }

    /// `id` no longer serves its workspace; true when it did.
    pub fn clear_owner(&mut self, id: &Identity) -> bool {
        let Some(cluster) = &id.cluster else {
            return false;
        };
        if self.owners.get(cluster) == Some(id) {
            self.owners.remove(cluster);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(cluster: &str, name: &str) -> Identity {
        Identity {
            cluster: Some(cluster.into()),
            namespace: "default".into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_workspace_stays_engaged_until_its_last_binding_goes() {
        let mut ws = Workspaces::default();
        let ep: Arc<str> = "https://shard-0/services/apiexport/x/e".into();
        assert!(ws.engage("a", "b1", &ep));
        assert!(!ws.engage("a", "b2", &ep));
        assert!(!ws.disengage("a", "b1"));
        assert!(ws.is_engaged("a"));
        assert!(ws.disengage("a", "b2"));
        assert!(!ws.is_engaged("a"));
        assert!(!ws.disengage("a", "b2"));
        assert_eq!(ws.engaged_count(), 0);
    }

    #[test]
    fn objects_are_indexed_per_workspace() {
        let mut ws = Workspaces::default();
        let ep: Arc<str> = "e".into();
        ws.add_object(&id("a", "x"), &ep);
        ws.add_object(&id("a", "y"), &ep);
        ws.add_object(&id("b", "x"), &ep);
        let mut a = ws.objects("a");
        a.sort();
        assert_eq!(a, [id("a", "x"), id("a", "y")]);
        assert_eq!(ws.objects("b"), [id("b", "x")]);
        ws.remove_object(&id("a", "x"));
        assert_eq!(ws.objects("a"), [id("a", "y")]);
        assert_eq!(ws.object_count(), 2);
        ws.set_owner(&id("b", "x"));
        assert!(!ws.clear_owner(&id("b", "y")));
        assert!(ws.clear_owner(&id("b", "x")));
        assert_eq!(ws.home("b").as_deref(), Some("e"));
    }
}
