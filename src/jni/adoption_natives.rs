//! The native of all-or-nothing adoption (`KstateNative.adoptionCheck`): the Java adapter
//! checks every kstate store of a task that will adopt a Kafka Streams directory before the
//! first of them is opened ([`crate::store::PlannedStore::check`]).

use jni::objects::{JClass, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::JNIEnv;

use super::guard::guard;
use super::natives::string;
use crate::format::meta::ValueFormat;
use crate::store::{PlannedStore, SessionOptions, WindowOptions};
use crate::{bridge, Error, StoreOptions};

/// `boolean adoptionCheck(String path, int kind, int valueFormat, long retentionMs,
/// long segmentIntervalMs, boolean adoptLeftOpen)`: kind 0 key-value, 1 window, 2 session, 3 time-ordered window,
/// 4 time-ordered session; value format as C's `KSTATE_FORMAT_*` (0 timestamped, 1 plain,
/// 2 headers); retention and segment interval (0 = Kafka's default) for window and session
/// stores; `adoptLeftOpen` as the store's open has it
/// ([`crate::StoreOptions::adopt_left_open`]). True when opening the store will
/// adopt a Kafka Streams store at `path`, false when there is nothing of Kafka's there;
/// throws (nothing changed) when the adoption would refuse it.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_adoptionCheck<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    kind: jint,
    value_format: jint,
    retention: jlong,
    segment_interval: jlong,
    adopt_left_open: jboolean,
) -> jboolean {
    guard(&mut env, 0, |env| {
        let path = string(env, &path, "path")?.into();
        let store = StoreOptions {
            value_format: match value_format {
                0 => ValueFormat::Timestamped,
                1 => ValueFormat::Plain,
                2 => ValueFormat::Headers,
                other => {
                    return Err(
                        Error::InvalidArgument(format!("unknown value format {other}")).into(),
                    )
                }
            },
            adopt_left_open: adopt_left_open == jni::sys::JNI_TRUE,
            ..StoreOptions::default()
        };
        let planned = match kind {
            0 => PlannedStore::KeyValue {
                path,
                options: store,
            },
            // 3 and 4: the time-ordered stores of `EmitStrategy.onWindowClose()`, which
            // adopt Kafka's time-ordered segments (whether Kafka kept a key index does not
            // change what is adopted).
            1 | 3 => {
                let mut options = WindowOptions::new(retention, 0, false).with_store(store);
                options.segment_interval = bridge::segment_interval(segment_interval);
                if kind == 3 {
                    options = options.time_ordered(false);
                }
                PlannedStore::Window { path, options }
            }
            2 | 4 => {
                let mut options = SessionOptions::new(retention).with_store(store);
                options.segment_interval = bridge::segment_interval(segment_interval);
                if kind == 4 {
                    options = options.time_ordered();
                }
                PlannedStore::Session { path, options }
            }
            other => {
                return Err(Error::InvalidArgument(format!("unknown store kind {other}")).into())
            }
        };
        Ok(jboolean::from(planned.check()?))
    })
}
