//! Value layouts: Kafka's timestamped values (`[i64 ts][value]`) and KIP-1271
//! headers-format values (`[varint size][headers][i64 ts][value]`), plus the upgrade
//! conversions between formats.
//!
//! Properties: decoding never panics; the timestamped layout is canonical (decode, encode
//! gives the input back); a headers-format value that decodes re-encodes to bytes that
//! decode to the same value; `check`, `split` and `decode` agree on what is well formed;
//! dropping the headers keeps timestamp and value; values built from the input
//! round-trip exactly and match a reference encoding of Kafka's varints; the upgrade
//! conversions give values of the target format holding the same value.
#![no_main]

use kstate::format::headers::{self, Header, ValueTimestampHeaders};
use kstate::format::{check_layout, upgrade_conversion, value, ValueAndTimestamp, ValueFormat};
use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::{bytes, name};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    timestamped(data);
    headers_format(data);
    conversions(data);
    let _ = built_values_round_trip(&mut Unstructured::new(data));
});

fn timestamped(raw: &[u8]) {
    match ValueAndTimestamp::decode(raw) {
        Ok(v) => {
            assert!(raw.len() >= 8);
            assert_eq!(v.encode(), raw);
            assert_eq!(value::split(raw).unwrap(), (v.timestamp, &v.value[..]));
        }
        Err(_) => assert!(raw.len() < 8),
    }
    assert_eq!(
        check_layout(ValueFormat::Timestamped, raw).is_ok(),
        raw.len() >= 8
    );
    assert!(check_layout(ValueFormat::Plain, raw).is_ok());
}

fn headers_format(raw: &[u8]) {
    let decoded = ValueTimestampHeaders::decode(raw);
    assert_eq!(headers::check(raw).is_ok(), decoded.is_ok());
    assert_eq!(
        check_layout(ValueFormat::Headers, raw).is_ok(),
        decoded.is_ok()
    );
    if let Ok(parts) = headers::split(raw) {
        let stripped = headers::to_timestamped(raw).expect("split values convert");
        assert_eq!(
            value::split(&stripped).unwrap(),
            (parts.timestamp, parts.value)
        );
        assert_eq!(
            headers::decode_headers(parts.headers).is_ok(),
            decoded.is_ok()
        );
    } else {
        assert!(decoded.is_err());
    }
    if let Ok(v) = decoded {
        let again = v.encode().expect("a decoded value encodes");
        assert_eq!(ValueTimestampHeaders::decode(&again).unwrap(), v);
    }
}

fn conversions(raw: &[u8]) {
    let plain_to_ts = upgrade_conversion(ValueFormat::Plain, ValueFormat::Timestamped).unwrap();
    assert_eq!(
        ValueAndTimestamp::decode(&plain_to_ts(raw)).unwrap(),
        ValueAndTimestamp::new(raw.to_vec(), -1)
    );
    let plain_to_h = upgrade_conversion(ValueFormat::Plain, ValueFormat::Headers).unwrap();
    assert_eq!(
        ValueTimestampHeaders::decode(&plain_to_h(raw)).unwrap(),
        ValueTimestampHeaders::new(raw.to_vec(), -1, vec![])
    );
    if let Ok(v) = ValueAndTimestamp::decode(raw) {
        let ts_to_h = upgrade_conversion(ValueFormat::Timestamped, ValueFormat::Headers).unwrap();
        assert_eq!(
            ValueTimestampHeaders::decode(&ts_to_h(raw)).unwrap(),
            ValueTimestampHeaders::new(v.value, v.timestamp, vec![])
        );
    }
    // Never back to an older format, nor to the same one.
    for to in [ValueFormat::Plain, ValueFormat::Timestamped] {
        assert!(upgrade_conversion(ValueFormat::Headers, to).is_none());
    }
    assert!(upgrade_conversion(ValueFormat::Timestamped, ValueFormat::Timestamped).is_none());
}

/// Kafka's `ByteUtils.writeVarint`, written from its description (zig-zag, then 7 bits a
/// byte, low group first), independently of kstate's encoder.
fn kafka_varint(out: &mut Vec<u8>, n: i32) {
    let mut v = (((n as i64) << 1) ^ ((n as i64) >> 63)) as u64 as u32;
    loop {
        let low = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

fn built_values_round_trip(u: &mut Unstructured<'_>) -> Result<()> {
    let mut hs = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let value = if u.arbitrary()? {
            Some(bytes(u, 8)?)
        } else {
            None
        };
        hs.push(Header::new(name(u, 6)?, value));
    }
    let v = ValueTimestampHeaders::new(bytes(u, 16)?, u.arbitrary()?, hs);
    let encoded = v.encode().expect("small values encode");
    assert_eq!(ValueTimestampHeaders::decode(&encoded).unwrap(), v);

    // The same value through Kafka's HeadersSerializer, written here from its description.
    let mut serialized = Vec::new();
    if !v.headers.is_empty() {
        kafka_varint(&mut serialized, v.headers.len() as i32);
        for h in &v.headers {
            kafka_varint(&mut serialized, h.key.len() as i32);
            serialized.extend_from_slice(h.key.as_bytes());
            match &h.value {
                Some(b) => {
                    kafka_varint(&mut serialized, b.len() as i32);
                    serialized.extend_from_slice(b);
                }
                None => kafka_varint(&mut serialized, -1),
            }
        }
    }
    let mut kafka = Vec::new();
    kafka_varint(&mut kafka, serialized.len() as i32);
    kafka.extend_from_slice(&serialized);
    kafka.extend_from_slice(&v.timestamp.to_be_bytes());
    kafka.extend_from_slice(&v.value);
    assert_eq!(encoded, kafka);

    let t = ValueAndTimestamp::new(bytes(u, 16)?, u.arbitrary()?);
    assert_eq!(ValueAndTimestamp::decode(&t.encode()).unwrap(), t);
    Ok(())
}
