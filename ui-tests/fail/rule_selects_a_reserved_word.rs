use service_provider::prelude::*;

#[api_type]
pub struct Target {
    pub namespace: String,
}

#[service_provider(group = "hello.example.io", version = "v1", kind = "Hello")]
#[x_kube(validation = Rule::new("self.target.namespace != 'kube-system'"))]
pub struct HelloSpec {
    pub greeting: String,
    pub target: Target,
}

fn main() {}
