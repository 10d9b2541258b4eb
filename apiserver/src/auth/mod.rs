//! Who is asking and what they may do: client-certificate and bearer-token authentication (static
//! tokens and ServiceAccount JWTs), the TokenRequest and TokenReview APIs, and kube-apiserver's RBAC
//! authorizer with its access-review APIs and bootstrap policy.
//!
//! The module is pure: it keeps no objects of its own. The server core
//! - authenticates each request with an [`Authenticator`] (one per cluster, or per kcp shard),
//!   passing an [`ObjectLookup`] so ServiceAccount tokens die with their ServiceAccount;
//! - authorizes it with the [`Rbac`] of the cluster (or kcp logical cluster) it targets, which it
//!   keeps current by calling [`Rbac::update`] for every write to an RBAC object, and checks RBAC
//!   writes with [`Rbac::check_escalation`];
//! - answers `serviceaccounts/token`, `tokenreviews` and the access reviews with the functions in
//!   [`token_request`], [`token_review`] and [`review`];
//! - installs [`bootstrap`]'s default roles when a cluster starts.
//!
//! Every refusal is the server's [`ApiError`] worded like kube-apiserver's.

pub(crate) mod attributes;
pub(crate) mod authenticator;
pub mod bootstrap;
pub(crate) mod clock;
pub(crate) mod jwt;
pub(crate) mod rbac;
pub(crate) mod review;
pub(crate) mod serviceaccount;
pub(crate) mod token_request;
pub(crate) mod token_review;
pub(crate) mod user;
pub(crate) mod x509;

pub use attributes::Attributes;
pub use authenticator::{Authenticated, Authenticator};
pub(crate) use rbac::Denial;
pub use rbac::{Decision, Rbac, RbacKind};
pub use serviceaccount::{
    LiveObject, ObjectLookup, ServiceAccountRef, TokenIssuer, TokenIssuerConfig,
};
pub use user::UserInfo;
