//! Writes the seed corpora of the fuzz targets (`fuzz/corpus/<target>/`) from real stores:
//! it creates kstate stores on RocksDB (key-value, headers-format, window, session), writes,
//! spills and commits, then reads the records kstate left on disk with RocksDB directly,
//! and adds the Kafka-written bytes kstate adopts (Kafka 4.4's `offsets` family and
//! `PositionSerde`) and packed JNI batches. Each seed is prefixed as its target expects.
//!
//! `bash scripts/fuzz.sh --seeds` runs it (once, by hand: the seeds are checked in).

use std::path::Path;

use kstate::format::headers::{self, Header};
use kstate::format::meta::{PendingCommit, PendingIngest, RangeDelete};
use kstate::jni::codec::encode_entry;
use kstate::{
    EngineKind, KvStore, SessionOptions, SessionStore, StoreOptions, TopicPartition, ValueFormat,
    WindowOptions, WindowStore,
};
use kstate_fuzz::{kafka_position, PositionTopic};

type Seeds = Vec<(&'static str, String, Vec<u8>)>;

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let dir = std::env::temp_dir().join(format!("kstate-seeds-{}", std::process::id()));
    let mut seeds: Seeds = Vec::new();
    real_stores(&dir, &mut seeds);
    let _ = std::fs::remove_dir_all(&dir);
    kafka(&mut seeds);
    jni(&mut seeds);
    for (target, name, bytes) in seeds {
        let d = out.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    }
}

fn tp(topic: &str, partition: i32, offset: Option<i64>) -> (TopicPartition, Option<i64>) {
    (TopicPartition::new(topic, partition), offset)
}

/// Every entry of every column family of the RocksDB database at `path`.
fn dump(path: &Path) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let names = rocksdb::DB::list_cf(&rocksdb::Options::default(), path).unwrap();
    let db = rocksdb::DB::open_cf_for_read_only(&rocksdb::Options::default(), path, &names, false)
        .unwrap();
    let mut out = Vec::new();
    for name in &names {
        let cf = db.cf_handle(name).unwrap();
        for entry in db.iterator_cf(&cf, rocksdb::IteratorMode::Start) {
            let (k, v) = entry.unwrap();
            out.push((name.clone(), k.to_vec(), v.to_vec()));
        }
    }
    out
}

fn real_stores(dir: &Path, seeds: &mut Seeds) {
    let rocks = |format| StoreOptions {
        value_format: format,
        ..StoreOptions::timestamped(EngineKind::RocksDb)
    };
    // Key-value store: two commits with offsets and a position-like blob.
    let kv = dir.join("kv");
    let s = KvStore::open(&kv, &rocks(ValueFormat::Timestamped)).unwrap();
    s.put(b"alpha", b"1", 1_700_000_000_000).unwrap();
    s.put(b"", b"", -1).unwrap();
    s.commit(&[tp("app-store-changelog", 0, Some(41))], Some(b"\x01pos"))
        .unwrap();
    s.put(b"beta", b"two", 5).unwrap();
    s.commit(
        &[
            tp("app-store-changelog", 0, Some(42)),
            tp("in", 3, Some(-4)),
        ],
        None,
    )
    .unwrap();
    s.close().unwrap();
    // Headers format.
    let hs = dir.join("headers");
    let s = KvStore::open(&hs, &rocks(ValueFormat::Headers)).unwrap();
    let v = headers::encode(
        b"v",
        9,
        &[
            Header::new("trace", Some(b"x1".to_vec())),
            Header::new("n", None),
        ],
    )
    .unwrap();
    s.put_raw(b"h", Some(&v)).unwrap();
    s.commit(&[], None).unwrap();
    s.close().unwrap();
    // Window and session stores.
    let w = dir.join("window");
    let mut wo = WindowOptions::new(3_600_000, 60_000, true);
    wo.store = rocks(ValueFormat::Timestamped);
    let s = WindowStore::open(&w, &wo).unwrap();
    s.put(b"k", Some(b"v1"), 10, 60_000).unwrap();
    s.put(b"k", Some(b"v2"), 11, 60_000).unwrap();
    s.commit(&[tp("w", 0, Some(7))], None).unwrap();
    s.close().unwrap();
    let ss = dir.join("session");
    let mut so = SessionOptions::new(3_600_000);
    so.store = rocks(ValueFormat::Timestamped);
    let s = SessionStore::open(&ss, &so).unwrap();
    s.put(b"user", 1_000, 2_000, Some(b"agg")).unwrap();
    s.commit(&[tp("s", 1, Some(9))], None).unwrap();
    s.close().unwrap();

    let mut n = 0;
    for store in [&kv, &hs, &w, &ss] {
        for (family, key, value) in dump(store) {
            n += 1;
            let name = format!(
                "{}-{family}-{n}",
                store.file_name().unwrap().to_str().unwrap()
            );
            match family.as_str() {
                "kstate_meta" => {
                    let mode = match &key[..] {
                        b"header" => 0,
                        b"committed" => 1,
                        b"pending" => 2,
                        b"ingest" => 3,
                        b"status" => 4,
                        _ => continue,
                    };
                    seeds.push(("meta", name, [&[mode][..], &value].concat()));
                }
                "keyValueWithTimestamp" | "keyValueWithTimestampAndHeaders" => {
                    seeds.push(("values", name, value));
                }
                // Stored keys of window and session stores: segment prefix, Kafka key.
                "kstate_windows" | "kstate_sessions" => {
                    seeds.push(("values", name.clone(), value));
                    seeds.push(("segmented", name, key));
                }
                _ => {}
            }
        }
    }
    // Records that exist on disk only while a commit is in flight, as kstate encodes them.
    let state = kstate::format::CommittedState {
        sequence: 3,
        offsets: [(TopicPartition::new("app-store-changelog", 0), 42)].into(),
        metadata: Some(b"\x01pos".to_vec()),
        stream_time: Some(120_000),
    };
    let pending = PendingCommit {
        txn: 5,
        families: vec!["keyValueWithTimestamp".into()],
        ranges: vec![RangeDelete {
            slot: 0,
            from: vec![0x80, 0, 0, 0, 0, 0, 0, 0],
            to: vec![0x80, 0, 0, 0, 0, 0, 0, 2],
        }],
        state: state.clone(),
    };
    seeds.push((
        "meta",
        "pending-v3".into(),
        [&[2u8][..], &pending.encode().unwrap()].concat(),
    ));
    let ingest = PendingIngest {
        family: "keyValueWithTimestamp".into(),
        file: "kstate-restore-1.sst".into(),
        state,
    };
    seeds.push((
        "meta",
        "ingest".into(),
        [&[3u8][..], &ingest.encode().unwrap()].concat(),
    ));
    let spill_key = [&[5u8, 0x02][..], &7u64.to_be_bytes(), &[0], b"key"].concat();
    seeds.push(("meta", "spill-key".into(), spill_key));
    seeds.push(("meta", "spill-put".into(), vec![5, 1, b'v']));
}

fn kafka(seeds: &mut Seeds) {
    // Kafka 4.4's PositionSerde, with the zero padding its buffer leaves.
    let topics: Vec<PositionTopic> = vec![("input".into(), vec![(2, 99)])];
    let mut position = kafka_position(&topics);
    position.extend_from_slice(&[0; 30]);
    seeds.push((
        "kafka_offsets",
        "position-kafka44".into(),
        [&[0u8][..], &position].concat(),
    ));
    let two: Vec<PositionTopic> = vec![
        ("a".into(), vec![(0, 1), (1, 2)]),
        ("b-changelog".into(), vec![(3, -4)]),
    ];
    seeds.push((
        "kafka_offsets",
        "position-two".into(),
        [&[0u8][..], &kafka_position(&two)].concat(),
    ));
    seeds.push(("kafka_offsets", "family".into(), vec![2; 24]));
}

fn jni(seeds: &mut Seeds) {
    let mut batch = Vec::new();
    encode_entry(&mut batch, b"key", Some(&[0, 0, 0, 0, 0, 0, 0, 5, b'v'])).unwrap();
    encode_entry(&mut batch, b"gone", None).unwrap();
    encode_entry(&mut batch, b"", Some(b"")).unwrap();
    seeds.push(("jni_codec", "batch".into(), batch));
    // Java's modified UTF-8: NUL as C0 80, a supplementary character as a surrogate pair.
    let java = cesu8::to_java_cesu8("topic-\u{0}-é-\u{1D11E}").into_owned();
    seeds.push(("jni_codec", "java-string".into(), java));
    // Inputs of the structured targets: the first byte of a C API sequence picks the
    // format and spilling; the rest drives the calls.
    for (i, first) in [0u8, 1, 2, 3].into_iter().enumerate() {
        let ops: Vec<u8> = (0..160u8)
            .map(|b| b.wrapping_mul(37).wrapping_add(i as u8))
            .collect();
        let sequence = [&[first][..], &ops].concat();
        seeds.push(("capi_kv", format!("sequence-{i}"), sequence.clone()));
        seeds.push(("capi_kv_rocksdb", format!("sequence-{i}"), sequence));
        seeds.push(("store_dir", format!("layout-{i}"), ops.clone()));
        seeds.push(("cli", format!("argv-{i}"), ops));
    }
    // Window and session call sequences: the first byte picks session or window, plain,
    // duplicates, spilling and a refused open first (bits 0-4).
    for (i, first) in [0u8, 1, 2, 4, 5, 8, 9, 16].into_iter().enumerate() {
        let ops: Vec<u8> = (0..200u8)
            .map(|b| b.wrapping_mul(53).wrapping_add(i as u8))
            .collect();
        let sequence = [&[first][..], &ops].concat();
        seeds.push(("capi_segmented", format!("sequence-{i}"), sequence.clone()));
        seeds.push(("capi_segmented_rocksdb", format!("sequence-{i}"), sequence));
    }
}
