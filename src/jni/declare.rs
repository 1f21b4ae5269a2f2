//! How a native is declared once: [`natives!`] turns a list of
//! `fn Java_…(arg: Type, …) -> Ret = body;` entries into the `extern "system"` functions,
//! each converting its Java arguments ([`FromJava`]), running its body (a call into
//! [`super::ops`] returning `crate::Result<Ret>`) inside [`super::guard::guard`] (panics
//! caught, errors thrown as typed exceptions) and converting its result ([`IntoJava`]).
//! The per-native code is then the declaration alone: the argument checks, the error
//! mapping and the panic guard are written here once.

use jni::objects::{JByteArray, JString};
use jni::sys::{jboolean, jbyteArray, jint, jlong, JNI_TRUE};
use jni::JNIEnv;

use super::guard::JniResult;
use super::natives::{bytes, opt_bytes, string, JavaBytes};

/// A native's argument type: what Java passes (`Raw`) and how it becomes the Rust value.
pub(crate) trait FromJava<'l>: Sized {
    /// The JNI type of the argument.
    type Raw;
    /// Converts `raw`; `what` names the argument in an error ("null key").
    fn from_java(env: &mut JNIEnv<'l>, raw: Self::Raw, what: &str) -> JniResult<Self>;
}

/// A native's result type: the JNI type it returns and how.
pub(crate) trait IntoJava {
    /// The JNI type returned.
    type Raw;
    /// Returned when an exception is thrown (Java ignores it then).
    const FALLBACK: Self::Raw;
    /// Converts the result.
    fn into_java(self, env: &mut JNIEnv<'_>) -> JniResult<Self::Raw>;
}

macro_rules! identity {
    ($($ty:ty = $fallback:expr),*) => {$(
        impl FromJava<'_> for $ty {
            type Raw = $ty;
            fn from_java(_: &mut JNIEnv<'_>, raw: $ty, _: &str) -> JniResult<$ty> {
                Ok(raw)
            }
        }
        impl IntoJava for $ty {
            type Raw = $ty;
            const FALLBACK: $ty = $fallback;
            fn into_java(self, _: &mut JNIEnv<'_>) -> JniResult<$ty> {
                Ok(self)
            }
        }
    )*};
}
identity!(jlong = 0, jint = 0, () = ());

impl FromJava<'_> for bool {
    type Raw = jboolean;
    fn from_java(_: &mut JNIEnv<'_>, raw: jboolean, _: &str) -> JniResult<bool> {
        Ok(raw == JNI_TRUE)
    }
}

impl IntoJava for bool {
    type Raw = jboolean;
    const FALLBACK: jboolean = 0;
    fn into_java(self, _: &mut JNIEnv<'_>) -> JniResult<jboolean> {
        Ok(jboolean::from(self))
    }
}

/// A `byte[]` that must not be null.
impl<'l> FromJava<'l> for JavaBytes {
    type Raw = JByteArray<'l>;
    fn from_java(env: &mut JNIEnv<'l>, raw: JByteArray<'l>, what: &str) -> JniResult<Self> {
        bytes(env, &raw, what)
    }
}

/// A `byte[]` where null means "none" (an open bound, a delete, no metadata).
impl<'l> FromJava<'l> for Option<JavaBytes> {
    type Raw = JByteArray<'l>;
    fn from_java(env: &mut JNIEnv<'l>, raw: JByteArray<'l>, _: &str) -> JniResult<Self> {
        opt_bytes(env, &raw)
    }
}

/// A `String` that must not be null.
impl<'l> FromJava<'l> for String {
    type Raw = JString<'l>;
    fn from_java(env: &mut JNIEnv<'l>, raw: JString<'l>, what: &str) -> JniResult<Self> {
        string(env, &raw, what)
    }
}

/// A `String` where null means "none" (the memory engine's path).
impl<'l> FromJava<'l> for Option<String> {
    type Raw = JString<'l>;
    fn from_java(env: &mut JNIEnv<'l>, raw: JString<'l>, what: &str) -> JniResult<Self> {
        if raw.is_null() {
            Ok(None)
        } else {
            string(env, &raw, what).map(Some)
        }
    }
}

/// A `byte[]` result, null for none.
impl IntoJava for Option<Vec<u8>> {
    type Raw = jbyteArray;
    const FALLBACK: jbyteArray = std::ptr::null_mut();
    fn into_java(self, env: &mut JNIEnv<'_>) -> JniResult<jbyteArray> {
        match self {
            None => Ok(std::ptr::null_mut()),
            Some(v) => Ok(env.byte_array_from_slice(&v)?.into_raw()),
        }
    }
}

/// Declares natives (see the module documentation). Each entry is
/// `/// doc` `fn Java_name(arg: Type, ...) -> Ret = body;` where `body` may use the
/// converted arguments by name and evaluates to `crate::Result<Ret>`; an argument's name is
/// what an error about it says (`null key`).
macro_rules! natives {
    ($(
        $(#[doc = $doc:literal])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $body:expr;
    )*) => {$(
        $(#[doc = $doc])*
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "system" fn $name<'l>(
            mut env: ::jni::JNIEnv<'l>,
            _class: ::jni::objects::JClass<'l>,
            $($arg: <$ty as $crate::jni::declare::FromJava<'l>>::Raw),*
        ) -> <$ret as $crate::jni::declare::IntoJava>::Raw {
            $crate::jni::guard::guard(
                &mut env,
                <$ret as $crate::jni::declare::IntoJava>::FALLBACK,
                |env| {
                    $(let $arg =
                        <$ty as $crate::jni::declare::FromJava<'l>>::from_java(
                            env, $arg, stringify!($arg),
                        )?;)*
                    let result: $ret = $body?;
                    $crate::jni::declare::IntoJava::into_java(result, env)
                },
            )
        }
    )*};
}
pub(crate) use natives;

/// Declares the transaction natives of one store kind (`T`: a [`crate::bridge::Transactional`]
/// store type), each given its Java name: commit with offsets and metadata, committed offset
/// and metadata, rollback, flush, uncommitted bytes and property, one definition for every
/// kind ([`super::ops`]'s generic bodies).
macro_rules! transaction_natives {
    ($ty:ty: commit = $commit:ident, committed_offset = $offset:ident,
     committed_metadata = $meta:ident, rollback = $rollback:ident, flush = $flush:ident,
     uncommitted_bytes = $bytes:ident, property = $prop:ident) => {
        /// `void *commit(long store, String[] topics, int[] partitions, long[] offsets,
        /// byte[] metadata)`: commits the transaction with the changelog offsets
        /// (`Long.MIN_VALUE` removes a partition's offset; empty arrays remove all) and, when
        /// not null, the metadata blob, atomically.
        #[no_mangle]
        pub extern "system" fn $commit<'l>(
            mut env: ::jni::JNIEnv<'l>,
            _class: ::jni::objects::JClass<'l>,
            h: ::jni::sys::jlong,
            topics: ::jni::objects::JObjectArray<'l>,
            partitions: ::jni::objects::JIntArray<'l>,
            offsets: ::jni::objects::JLongArray<'l>,
            metadata: ::jni::objects::JByteArray<'l>,
        ) {
            $crate::jni::guard::guard(&mut env, (), |env| {
                let entries =
                    $crate::jni::natives::offsets_of(env, &topics, &partitions, &offsets)?;
                let metadata = $crate::jni::natives::opt_bytes(env, &metadata)?;
                Ok($crate::jni::ops::commit::<$ty>(
                    h,
                    &entries,
                    metadata.as_deref(),
                )?)
            })
        }

        $crate::jni::declare::natives! {
            /// `long *committedOffset(long store, String topic, int partition)`:
            /// `Long.MIN_VALUE` when none is committed.
            fn $offset(h: jlong, topic: String, partition: jint) -> jlong =
                $crate::jni::ops::committed_offset::<$ty>(h, topic, partition);
            /// `byte[] *committedMetadata(long store)`: the metadata blob of the last commit
            /// carrying one, or null.
            fn $meta(h: jlong) -> Option<Vec<u8>> = $crate::jni::ops::committed_metadata::<$ty>(h);
            /// `void *rollback(long store)`: discards the uncommitted writes.
            fn $rollback(h: jlong) -> () = $crate::jni::ops::rollback::<$ty>(h);
            /// `void *flush(long store, byte[] metadata)`: commits the uncommitted writes
            /// keeping every committed offset as it is (for Kafka Streams 4.0-4.2 runtimes,
            /// which keep offsets in their own checkpoint file).
            fn $flush(h: jlong, metadata: Option<JavaBytes>) -> () =
                $crate::jni::ops::flush::<$ty>(h, metadata.as_deref());
            /// `long *approximateNumUncommittedBytes(long store)`.
            fn $bytes(h: jlong) -> jlong = $crate::jni::ops::uncommitted_bytes::<$ty>(h);
            /// `long *property(long store, String name)`: an integer RocksDB property or
            /// statistics ticker by RocksDB name (`rocksdb.cur-size-all-mem-tables`,
            /// `rocksdb.bytes.written`); -1 when the store has none (memory engine, unknown
            /// name, statistics off).
            fn $prop(h: jlong, name: String) -> jlong =
                $crate::jni::ops::property::<$ty>(h, &name);
        }
    };
}
pub(crate) use transaction_natives;
