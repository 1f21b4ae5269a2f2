//! The README's Rust example is this file's `readme_example` body, byte for byte (after
//! its indentation), and runs here: the front page cannot go stale.

use std::path::Path;

use kstate::{Isolation, KvStore, StoreOptions, TopicPartition};

fn example(state_dir: &Path) -> kstate::Result<()> {
    // README:begin
    let store = KvStore::open(state_dir.join("counts"), &StoreOptions::default())?;
    store.put(b"alice", b"3", 1_700_000_000_000)?; // value + record timestamp
    assert_eq!(store.get(b"alice")?.unwrap().value, b"3"); // the writer sees its writes
    let committed = store.get_raw_with(Isolation::ReadCommitted, b"alice")?;
    assert_eq!(committed, None); // others do not, until the commit

    let tp = TopicPartition::new("app-counts-changelog", 0);
    store.commit(&[(tp.clone(), Some(41))], None)?; // data + offset, one atomic write
    assert_eq!(store.committed_offset(&tp)?, Some(41));

    // inclusive bounds, like Kafka; raw values are [BE i64 timestamp][value]
    for entry in store.range(Some(b"a"), Some(b"m"))? {
        let (key, raw) = entry?;
        assert_eq!((key.as_slice(), &raw[8..]), (&b"alice"[..], &b"3"[..]));
    }
    // closing discards uncommitted writes
    store.close()?;
    // README:end
    Ok(())
}

#[test]
fn the_readme_example_runs() {
    let dir = tempfile::tempdir().unwrap();
    example(dir.path()).unwrap();
    // and what it committed is there after a reopen
    let store = KvStore::open(dir.path().join("counts"), &StoreOptions::default()).unwrap();
    let tp = TopicPartition::new("app-counts-changelog", 0);
    assert_eq!(store.committed_offset(&tp).unwrap(), Some(41));
    assert_eq!(store.get(b"alice").unwrap().unwrap().value, b"3");
}

#[test]
fn the_readme_shows_this_example() {
    let source = include_str!("readme.rs");
    let begin = source.find("// README:begin\n").unwrap() + "// README:begin\n".len();
    let end = source.find("    // README:end").unwrap();
    let body: String = source[begin..end]
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .map(|l| format!("{l}\n"))
        .collect();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme.find("```rust\n").expect("a Rust block in README.md") + "```rust\n".len();
    let block = &readme[start..start + readme[start..].find("```\n").unwrap()];
    let expected =
        format!("use kstate::{{Isolation, KvStore, StoreOptions, TopicPartition}};\n\n{body}");
    assert_eq!(
        block, expected,
        "README.md's Rust example is tests/readme.rs's example()"
    );
}
