//! The openMCP platform API as a provider sees it: ClusterRequest, AccessRequest and Cluster
//! (`clusters.openmcp.cloud/v1alpha1`), ServiceProvider (`openmcp.cloud/v1alpha1`), ControlPlane
//! (`core.open-control-plane.io/v2alpha1`), their CRDs, the labels and finalizers they carry,
//! and the names openMCP derives for them.
//!
//! Field names follow the Go types of `openmcp-operator/api` (`openmcp.md` §1–2): a Rust provider
//! and the Go platform operator read each other's objects unchanged.

pub mod clusters;
pub mod common;
pub mod constants;
pub mod controlplane;
pub mod naming;
pub mod provider;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use clusters::{
    AccessRequest, AccessRequestSpec, AccessRequestStatus, Cluster, ClusterRequest,
    ClusterRequestSpec, ClusterRequestStatus, ClusterSpec, ClusterStatus, OidcConfig,
    PermissionsRequest, RequestStatus, Tenancy, TokenConfig,
};
pub use common::{
    CommonStatus, LocalObjectReference, ObjectReference, OidcProviderConfig, RoleBindings,
    RoleKind, RoleRef,
};
pub use controlplane::{ControlPlane, ControlPlaneSpec, ControlPlaneStatus};
pub use provider::{
    DeploymentSpec, EnvVar, GroupVersionKind, MetricsConfig, ServiceProviderObject,
    ServiceProviderStatus,
};

/// The CRDs of the platform cluster: ClusterRequest, AccessRequest, Cluster, ServiceProvider
/// (each labelled `openmcp.cloud/cluster: platform`).
pub fn platform_crds() -> Vec<CustomResourceDefinition> {
    vec![
        ClusterRequest::crd(),
        AccessRequest::crd(),
        Cluster::crd(),
        ServiceProviderObject::crd(),
    ]
}

/// The CRDs of the onboarding cluster: ControlPlane (labelled `openmcp.cloud/cluster: onboarding`).
pub fn onboarding_crds() -> Vec<CustomResourceDefinition> {
    vec![ControlPlane::crd()]
}

/// Every openMCP CRD this module defines.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut all = platform_crds();
    all.extend(onboarding_crds());
    all
}

#[cfg(test)]
mod tests;
