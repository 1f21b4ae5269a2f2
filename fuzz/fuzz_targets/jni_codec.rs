//! What the JNI surface decodes from Java: packed entry batches (putAll, restore batches;
//! `[i32 key len][key][i32 value len, -1 = null][value]`*) and strings in the JVM's
//! modified UTF-8 (paths, topics, property names).
//!
//! Properties: decoding never panics; the batch layout is canonical (re-encoding decoded
//! entries gives the input back) and refused input is exactly what a model refuses;
//! batches built from the input round-trip; a decoded Java string re-encodes to the
//! input bytes, and every Rust string survives the trip through modified UTF-8.
#![no_main]

use kstate::fuzz_api;
use kstate::jni::codec::{decode_entries, encode_entry};
use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    batch(data);
    java_string(data);
    let _ = built_batch(&mut Unstructured::new(data));
});

/// The model: walks the lengths and says whether the batch is well formed.
fn well_formed(mut buf: &[u8]) -> bool {
    let len = |buf: &mut &[u8], value: bool| -> Option<usize> {
        let (head, tail) = buf.split_first_chunk::<4>()?;
        *buf = tail;
        match i32::from_be_bytes(*head) {
            -1 if value => Some(0),
            n => usize::try_from(n).ok(),
        }
    };
    while !buf.is_empty() {
        for value in [false, true] {
            let Some(n) = len(&mut buf, value) else {
                return false;
            };
            if buf.len() < n {
                return false;
            }
            buf = &buf[n..];
        }
    }
    true
}

fn batch(raw: &[u8]) {
    let decoded = decode_entries(raw);
    assert_eq!(
        decoded.is_ok(),
        well_formed(raw),
        "model and decoder disagree"
    );
    if let Ok(entries) = decoded {
        let mut again = Vec::new();
        for (k, v) in entries {
            encode_entry(&mut again, k, v).unwrap();
        }
        assert_eq!(again, raw);
    }
}

fn java_string(raw: &[u8]) {
    match (fuzz_api::java_string(raw), std::str::from_utf8(raw)) {
        // Plain UTF-8 is taken as it is (also a raw NUL or a 4-byte sequence, which the
        // JVM never hands out: it writes them as `C0 80` and surrogate pairs).
        (decoded, Ok(utf8)) => assert_eq!(decoded.unwrap(), utf8),
        // Anything else must be canonical modified UTF-8: re-encoding gives it back.
        (Ok(text), Err(_)) => assert_eq!(&cesu8::to_java_cesu8(&text)[..], raw),
        (Err(_), Err(_)) => {}
    }
    if let Ok(text) = std::str::from_utf8(raw) {
        let java = cesu8::to_java_cesu8(text);
        assert_eq!(fuzz_api::java_string(&java).unwrap(), text);
    }
}

fn built_batch(u: &mut Unstructured<'_>) -> Result<()> {
    let mut entries = Vec::new();
    for _ in 0..u.int_in_range(0..=4)? {
        let key = bytes(u, 8)?;
        let value = if u.arbitrary()? {
            Some(bytes(u, 8)?)
        } else {
            None
        };
        entries.push((key, value));
    }
    let mut packed = Vec::new();
    for (k, v) in &entries {
        encode_entry(&mut packed, k, v.as_deref()).unwrap();
    }
    let decoded = decode_entries(&packed).unwrap();
    let expected: Vec<(&[u8], Option<&[u8]>)> = entries
        .iter()
        .map(|(k, v)| (&k[..], v.as_deref()))
        .collect();
    assert_eq!(decoded, expected);
    Ok(())
}
