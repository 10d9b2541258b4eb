//! The README's "Testing your provider" example is the `examples/hello` test that runs in this
//! binary (`hello::tests`), so it compiles and passes, and cannot drift from it.

/// The first fenced code block after `heading` whose info string starts with `rust`.
fn rust_block_after<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let section = &text[text.find(heading)?..];
    let start = section.find("```rust")?;
    let body = &section[start..];
    let body = &body[body.find('\n')? + 1..];
    Some(&body[..body.find("\n```")?])
}

#[test]
fn readme_testing_example_is_the_hello_examples_test() {
    let readme = include_str!("../../README.md");
    let hello = include_str!("../../examples/hello/main.rs");
    let block = rust_block_after(readme, "## Testing your provider")
        .expect("README.md has a rust block under \"## Testing your provider\"");
    assert!(
        block.contains("mod tests") && block.contains("TestPlatform"),
        "the README block is the kit example:\n{block}"
    );
    assert!(
        hello.contains(block),
        "README.md's \"Testing your provider\" example differs from the test in examples/hello/main.rs; copy the test module over:\n{block}"
    );
}
