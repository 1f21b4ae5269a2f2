//! Kafka Streams' legacy task checkpoint file, `<taskDir>/.checkpoint` (`OffsetCheckpoint`):
//! where Kafka Streams 4.2 and older keep the changelog offsets of a task's stores. Text:
//! the version (`0`), the number of entries, then one `topic partition offset` line each.
//! The file belongs to the task and is shared by all its stores, so entries are merged
//! into it, never replaced wholesale; it is rewritten as Kafka does (a `.tmp` file synced,
//! then renamed over it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::format::TopicPartition;
use crate::{Error, Result};

/// Kafka's `OFFSET_UNKNOWN`, the one negative offset a checkpoint may hold.
const OFFSET_UNKNOWN: i64 = -4;

/// Parses a checkpoint file's text.
///
/// # Errors
/// [`Error::Corruption`] for another version, a malformed line or a wrong count.
pub(crate) fn parse(text: &str, path: &Path) -> Result<BTreeMap<TopicPartition, i64>> {
    let bad = |why: String| Error::Corruption(format!("{}: {why}", path.display()));
    let mut lines = text.lines();
    let mut int = |what: &str| -> Result<i64> {
        lines
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| bad(format!("no {what} line")))
    };
    let version = int("version")?;
    if version != 0 {
        return Err(bad(format!("checkpoint version {version}, not 0")));
    }
    let count = int("count")?;
    let mut out = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let parsed = match parts.as_slice() {
            [topic, partition, offset] => partition
                .parse::<i32>()
                .ok()
                .zip(offset.parse::<i64>().ok())
                .map(|(p, o)| (TopicPartition::new(*topic, p), o)),
            _ => None,
        };
        let (tp, offset) = parsed.ok_or_else(|| bad(format!("malformed line {line:?}")))?;
        out.insert(tp, offset);
    }
    if i64::try_from(out.len()).ok() != Some(count) {
        return Err(bad(format!(
            "{count} entries announced, {} found",
            out.len()
        )));
    }
    Ok(out)
}

/// The text of a checkpoint holding `offsets`.
pub(crate) fn render(offsets: &BTreeMap<TopicPartition, i64>) -> String {
    let mut out = format!("0\n{}\n", offsets.len());
    for (tp, offset) in offsets {
        out.push_str(&format!("{} {} {offset}\n", tp.topic, tp.partition));
    }
    out
}

/// Merges `offsets` into the `.checkpoint` of the task directory of the Kafka store at
/// `target` (`<taskDir>/rocksdb/<name>`): entries of other partitions are kept, those of
/// these partitions replaced. Offsets Kafka's checkpoint cannot hold (negative, other than
/// `-4`) are left out, as Kafka's own writer refuses them. Returns the file's path.
///
/// # Errors
/// [`Error::InvalidArgument`] when `target` is not in a task directory's `rocksdb`
/// directory; [`Error::Corruption`] for an existing file Kafka could not read either;
/// [`Error::Io`].
pub(crate) fn merge(target: &Path, offsets: &BTreeMap<TopicPartition, i64>) -> Result<PathBuf> {
    let task = target
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == "rocksdb"))
        .and_then(Path::parent)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} is not in a Kafka Streams task directory (<taskDir>/rocksdb/<name>): \
                 there is no task checkpoint to write",
                target.display()
            ))
        })?;
    merge_task(task, offsets)
}

/// Merges `offsets` into `<task>/.checkpoint` as [`merge`] does; for stores that live
/// directly in the task directory (Kafka's window and session stores, `<taskDir>/<name>/`).
///
/// # Errors
/// [`Error::Corruption`] for an existing file Kafka could not read either; [`Error::Io`].
pub(crate) fn merge_task(task: &Path, offsets: &BTreeMap<TopicPartition, i64>) -> Result<PathBuf> {
    let file = task.join(".checkpoint");
    let mut merged = match std::fs::read_to_string(&file) {
        Ok(text) => parse(&text, &file)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(e) => return Err(Error::io(&file, e)),
    };
    for (tp, offset) in offsets {
        if *offset >= 0 || *offset == OFFSET_UNKNOWN {
            merged.insert(tp.clone(), *offset);
        }
    }
    let tmp = task.join(".checkpoint.tmp");
    let io = |e| Error::io(&tmp, e);
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(render(&merged).as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, &file).map_err(|e| Error::io(&file, e))?;
    std::fs::File::open(task)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(task, e))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_other_partitions_and_replaces_ours() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("0_1");
        std::fs::create_dir_all(task.join("rocksdb")).unwrap();
        std::fs::write(
            task.join(".checkpoint"),
            "0\n2\nother-changelog 1 17\napp-s-changelog 1 5\n",
        )
        .unwrap();
        let mut ours = BTreeMap::new();
        ours.insert(TopicPartition::new("app-s-changelog", 1), 99);
        ours.insert(TopicPartition::new("app-t-changelog", 1), -4);
        ours.insert(TopicPartition::new("app-u-changelog", 1), -1);
        let file = merge(&task.join("rocksdb").join("s"), &ours).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "0\n3\napp-s-changelog 1 99\napp-t-changelog 1 -4\nother-changelog 1 17\n"
        );
        assert!(!task.join(".checkpoint.tmp").exists());
        assert_eq!(parse(&render(&ours), &file).unwrap(), ours);
        // a file Kafka could not read is not overwritten
        std::fs::write(&file, "1\n0\n").unwrap();
        let err = merge(&task.join("rocksdb").join("s"), &ours).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Corruption, "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "1\n0\n");
        std::fs::write(&file, "0\n2\na 0 1\n").unwrap();
        assert!(merge(&task.join("rocksdb").join("s"), &ours).is_err());
        // outside a task's rocksdb directory there is no task checkpoint
        assert!(merge(&dir.path().join("s"), &ours).is_err());
    }
}
