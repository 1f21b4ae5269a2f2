//! How a native is declared once. [`natives!`] turns each entry
//! `java "javaName" fn name(arg: Type, …) -> Ret { body }` into `fn name`, the body as a
//! plain Rust function of borrowed arguments (`&[u8]` for a `byte[]`,
//! [`super::convert::FromJava`]) returning `crate::Result<Ret>`, which the tests call without
//! a JVM, and the `extern "system"` function `Java_dev_kstate_internal_KstateNative_javaName`,
//! which converts the Java arguments, calls `name` inside [`super::guard::guard`] (panics
//! caught, errors thrown as typed exceptions) and converts the result
//! ([`super::convert::IntoJava`]). [`kind_natives!`] declares the natives every store kind
//! has once for all kinds, a kind's Java names being its prefix and the operation.

/// The exported symbol of a native: `"name"`, or `(prefix, "name", "Name")` for a store
/// kind's (`name` for the key-value kind, whose prefix is empty, else `prefixName`).
macro_rules! java_name {
    ($name:literal) => {
        concat!("Java_dev_kstate_internal_KstateNative_", $name)
    };
    (("", $lower:literal, $upper:literal)) => {
        concat!("Java_dev_kstate_internal_KstateNative_", $lower)
    };
    (($prefix:literal, $lower:literal, $upper:literal)) => {
        concat!("Java_dev_kstate_internal_KstateNative_", $prefix, $upper)
    };
}
pub(crate) use java_name;

/// Declares natives (see the module documentation); an argument's name is what an error
/// about it says (`null key`).
macro_rules! natives {
    ($(
        $(#[doc = $doc:literal])*
        java $java:tt fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block
    )*) => {$(
        $(#[doc = $doc])*
        #[allow(clippy::too_many_arguments, clippy::extra_unused_lifetimes)]
        pub(crate) fn $name<'a>(
            $($arg: <$ty as $crate::jni::convert::FromJava>::Arg<'a>),*
        ) -> $crate::Result<$ret> $body

        const _: () = {
            $(#[doc = $doc])*
            #[export_name = $crate::jni::declare::java_name!($java)]
            #[allow(clippy::too_many_arguments)]
            pub extern "system" fn native<'l>(
                mut env: ::jni::JNIEnv<'l>,
                _class: ::jni::objects::JClass<'l>,
                $($arg: <$ty as $crate::jni::convert::FromJava>::Raw<'l>),*
            ) -> <$ret as $crate::jni::convert::IntoJava>::Raw {
                use $crate::jni::convert::{FromJava, IntoJava};
                $crate::jni::guard::guard(&mut env, <$ret as IntoJava>::FALLBACK, |env| {
                    $(let $arg = <$ty as FromJava>::from_java(env, $arg, stringify!($arg))?;)*
                    let result: $ret = $name($(FromJava::arg(&$arg)),*)?;
                    result.into_java(env)
                })
            }
        };
    )*};
}
pub(crate) use natives;

/// Declares, in module `$m`, the natives of store kind `$T` (Java prefix `$p`, iterator
/// handle `$Iter`, whose batches [`Packed`](super::natives::Packed) packs, closed by
/// `$close` / `$close_iter`). Window and session stores add
/// `putAll` (Kafka's store keys), `streamTime` and `query`: `$Q` is the kind's query, `$a` /
/// `$b` its two times, `$open_iter` opens its iterator, `$more` builds the kinds beyond
/// [`KEY`](super::segmented::KEY) and [`KEY_RANGE`](super::segmented::KEY_RANGE), and
/// `$by => $by_end` opens the iterator of query kind `$by` itself.
macro_rules! kind_natives {
    ($m:ident, $p:tt, $T:ident, $Iter:ident, $close:path, $close_iter:path
     $(; $Q:ident($a:ident, $b:ident), $open_iter:path, $more:expr $(, $by:ident => $by_end:path)?)?) => {
        #[doc = concat!("The natives every store kind has, for [`", stringify!($T), "`].")]
        pub(crate) mod $m {
            use super::*;
            use $crate::bridge::Transactional;
            use $crate::jni::natives::{number, saturating, store, Packed, NO_OFFSET};

            $crate::jni::declare::natives! {
                /// `void *close(long store)`: closes the store and its iterators; the handle dies.
                java ($p, "close", "Close") fn close(h: jlong) -> () {
                    $close(number(h))
                }
                /// `byte[] *next(long iterator, int maxEntries, int maxBytes)`: the next entries
                /// ([`Packed`]), null once exhausted.
                java ($p, "next", "Next") fn next(it: jlong, max_entries: jint, max_bytes: jint)
                    -> Option<Vec<u8>> {
                    store::<$Iter>(it)?.pack(max_entries, max_bytes)
                }
                /// `void *closeIterator(long iterator)`: releases the iterator; the handle dies.
                java ($p, "closeIterator", "CloseIterator") fn close_iterator(it: jlong) -> () {
                    $close_iter(number(it))
                }
                /// `void *commit(long store, String[] topics, int[] partitions, long[] offsets,
                /// byte[] metadata)`: commits with the changelog offsets ([`NO_OFFSET`] removes
                /// one; none removes all) and, when not null, the metadata blob, atomically.
                java ($p, "commit", "Commit") fn commit(h: jlong, topics: Vec<String>,
                    partitions: Vec<jint>, offsets: Vec<jlong>, metadata: Option<JavaBytes>) -> () {
                    let offsets = $crate::jni::convert::offsets(topics, partitions, offsets)?;
                    <$T as Transactional>::commit(&*store::<$T>(h)?, &offsets, metadata)
                }
                /// `long *committedOffset(long store, String topic, int partition)`: [`NO_OFFSET`]
                /// when none is committed.
                java ($p, "committedOffset", "CommittedOffset")
                fn committed_offset(h: jlong, topic: String, partition: jint) -> jlong {
                    let tp = $crate::TopicPartition::new(topic, partition);
                    Ok(<$T as Transactional>::committed_offset(&*store::<$T>(h)?, &tp)?.unwrap_or(NO_OFFSET))
                }
                /// `byte[] *committedMetadata(long store)`: the metadata blob of the last commit
                /// carrying one, or null.
                java ($p, "committedMetadata", "CommittedMetadata")
                fn committed_metadata(h: jlong) -> Option<Vec<u8>> {
                    <$T as Transactional>::committed_metadata(&*store::<$T>(h)?)
                }
                /// `void *rollback(long store)`: discards the uncommitted writes.
                java ($p, "rollback", "Rollback") fn rollback(h: jlong) -> () {
                    <$T as Transactional>::rollback(&*store::<$T>(h)?)
                }
                /// `void *flush(long store, byte[] metadata)`: commits keeping the committed offsets
                /// (Kafka Streams 4.0-4.2 keep offsets in their own checkpoint file).
                java ($p, "flush", "Flush") fn flush(h: jlong, metadata: Option<JavaBytes>) -> () {
                    $crate::bridge::flush(&*store::<$T>(h)?, metadata)
                }
                /// `long *approximateNumUncommittedBytes(long store)`.
                java ($p, "approximateNumUncommittedBytes", "ApproximateNumUncommittedBytes")
                fn uncommitted_bytes(h: jlong) -> jlong {
                    Ok(saturating(<$T as Transactional>::uncommitted_bytes(&*store::<$T>(h)?)?))
                }
                /// `byte[] *checkpoint(long store, String dir)`: writes a checkpoint of the last
                /// commit to the new directory `dir` and returns what it holds
                /// ([`pack_checkpoint`](super::natives::pack_checkpoint)).
                java ($p, "checkpoint", "Checkpoint") fn checkpoint(h: jlong, dir: String) -> Option<Vec<u8>> {
                    let dir = $crate::bridge::store_path(dir.as_bytes())?;
                    let info = <$T as Transactional>::checkpoint(&*store::<$T>(h)?, &dir)?;
                    Ok(Some($crate::jni::natives::pack_checkpoint(&info)))
                }
                /// `long *property(long store, String name)`: an integer RocksDB property or
                /// statistics ticker by name, -1 when the store has none (memory engine, unknown
                /// name, statistics off).
                java ($p, "property", "Property") fn property(h: jlong, name: String) -> jlong {
                    Ok(<$T as Transactional>::property(&*store::<$T>(h)?, name)?.map_or(-1, saturating))
                }
            }

            $($crate::jni::declare::natives! {
                /// `void *PutAll(long store, byte[] packed)`: a packed batch keyed by Kafka's
                /// store keys of the kind (changelog restore), all or nothing.
                java ($p, "putAll", "PutAll") fn put_all(h: jlong, batch: JavaBytes) -> () {
                    store::<$T>(h)?.put_all_kafka_keys(&$crate::jni::codec::decode_entries(batch)?)
                }
                /// `long *StreamTime(long store, boolean committed)`: Kafka's observed stream
                /// time, -1 before the first record.
                java ($p, "streamTime", "StreamTime") fn stream_time(h: jlong, committed: bool) -> jlong {
                    store::<$T>(h)?.stream_time(isolation(committed))
                }
                /// `byte[] *Query(long store, int kind, byte[] keyFrom, byte[] keyTo, long a, long b,
                /// boolean reverse, boolean committed, int maxEntries, int maxBytes)`: a new
                /// iterator's handle and first batch ([`first_batch`](super::natives::first_batch));
                /// kinds and times are the store kind's (`NativeWindowStore.QUERY_*`,
                /// `NativeSessionStore.QUERY_*`).
                java ($p, "query", "Query") fn query(h: jlong, kind: jint, key_from: Option<JavaBytes>,
                    key_to: Option<JavaBytes>, $a: jlong, $b: jlong, reverse: bool, committed: bool,
                    max_entries: jint, max_bytes: jint) -> Option<Vec<u8>> {
                    let first = |iter: $Iter| {
                        $crate::jni::natives::first_batch(iter, |i| &i.0, max_entries, max_bytes)
                    };
                    $(if kind == $by {
                        return first($by_end(number(h), isolation(committed), $a, $b, reverse)?);
                    })?
                    let query = match kind {
                        KEY => $Q::Key { key: required(key_from)?, $a, $b },
                        KEY_RANGE => {
                            let (key_from, key_to) = (key_from.map(<[u8]>::to_vec), key_to.map(<[u8]>::to_vec));
                            $Q::KeyRange { key_from, key_to, $a, $b }
                        }
                        other => ($more)(other, $a, $b).ok_or_else(|| {
                            Error::InvalidArgument(format!("unknown {} query kind {other}", $p))
                        })?,
                    };
                    first($open_iter(number(h), |s| s.query(isolation(committed), &query, reverse))?)
                }
            })?
        }
    };
}
pub(crate) use kind_natives;
