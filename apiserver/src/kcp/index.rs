//! The workspace index: which shard holds each logical cluster, and which workspace path resolves to
//! which logical cluster name (kcp's front-proxy index).

use std::collections::HashMap;
use std::sync::Arc;

/// Where a logical cluster lives and what it is called.
#[derive(Debug, Clone)]
pub(crate) struct ClusterEntry {
    /// The logical cluster name.
    pub name: Arc<str>,
    /// Index of the shard holding it.
    pub shard: usize,
    /// Its canonical path (`root:org:ws`).
    pub path: Arc<str>,
}

/// The index: logical cluster names and workspace paths.
#[derive(Debug, Default)]
pub(crate) struct Index {
    by_name: HashMap<Arc<str>, ClusterEntry>,
    by_path: HashMap<Arc<str>, Arc<str>>,
}

impl Index {
    /// Records a logical cluster and its path.
    pub(crate) fn insert(&mut self, name: &str, shard: usize, path: &str) -> ClusterEntry {
        let entry = ClusterEntry {
            name: name.into(),
            shard,
            path: path.into(),
        };
        self.by_path.insert(entry.path.clone(), entry.name.clone());
        self.by_name.insert(entry.name.clone(), entry.clone());
        entry
    }

    /// Forgets a logical cluster.
    pub(crate) fn remove(&mut self, name: &str) -> Option<ClusterEntry> {
        let e = self.by_name.remove(name)?;
        if self.by_path.get(&e.path).is_some_and(|n| **n == *name) {
            self.by_path.remove(&e.path);
        }
        Some(e)
    }

    /// A logical cluster by name.
    pub(crate) fn by_name(&self, name: &str) -> Option<&ClusterEntry> {
        self.by_name.get(name)
    }

    /// A logical cluster by path.
    pub(crate) fn by_path(&self, path: &str) -> Option<&ClusterEntry> {
        self.by_name.get(self.by_path.get(path)?)
    }

    /// Resolves what a URL's `/clusters/<x>` names: a path (`root:org`) or a logical cluster name.
    pub(crate) fn resolve(&self, x: &str) -> Option<&ClusterEntry> {
        self.by_path(x).or_else(|| self.by_name(x))
    }

    #[cfg(test)]
    /// How many logical clusters are known.
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_paths_and_names() {
        let mut i = Index::default();
        i.insert("root", 0, "root");
        i.insert("27uqz02z4wed6sjb", 1, "root:org");
        assert_eq!(i.resolve("root").map(|e| e.shard), Some(0));
        assert_eq!(
            i.resolve("root:org").map(|e| &*e.name),
            Some("27uqz02z4wed6sjb")
        );
        assert_eq!(
            i.resolve("27uqz02z4wed6sjb").map(|e| &*e.path),
            Some("root:org")
        );
        assert!(i.resolve("root:other").is_none());
        i.remove("27uqz02z4wed6sjb");
        assert!(i.resolve("root:org").is_none());
        assert_eq!(i.len(), 1);
    }
}
