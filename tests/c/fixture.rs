//! Test fixture for the C suite: writes a Kafka Streams timestamped RocksDB store (column
//! family `keyValueWithTimestamp`, as `RocksDBTimestampedStore` lays it out) whose entries
//! `a`..`e` carry an 8-byte big-endian timestamp, except `c`, whose 3-byte value is too
//! short. kstate adopts such a store on open; reading `c` must fail with INVALID_VALUE
//! without losing the entries around it.
//!
//! Usage: `c_fixture <directory>` (the directory must not exist yet).

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: c_fixture <directory>");
        return ExitCode::from(2);
    };
    let mut options = rocksdb::Options::default();
    options.create_if_missing(true);
    options.create_missing_column_families(true);
    let db = match rocksdb::DB::open_cf(&options, &dir, ["default", "keyValueWithTimestamp"]) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("c_fixture: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(cf) = db.cf_handle("keyValueWithTimestamp") else {
        eprintln!("c_fixture: column family missing");
        return ExitCode::FAILURE;
    };
    for (timestamp, key) in [b"a", b"b", b"c", b"d", b"e"].into_iter().enumerate() {
        let value = if key == b"c" {
            b"abc".to_vec()
        } else {
            let mut v = (timestamp as i64).to_be_bytes().to_vec();
            v.extend_from_slice(key);
            v
        };
        if let Err(e) = db.put_cf(&cf, key, value) {
            eprintln!("c_fixture: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
