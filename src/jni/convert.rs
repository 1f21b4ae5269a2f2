//! How a Java argument becomes a Rust value and a Rust result a Java value, written once
//! for every native ([`super::declare::natives`] applies them by type).

use jni::objects::{JByteArray, JIntArray, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jbyteArray, jint, jlong, JNI_TRUE};
use jni::JNIEnv;

use super::guard::JniResult;
use super::natives::OpenArgs;
use crate::{Error, Result, TopicPartition};

/// A native's argument type: the JNI type Java passes (`Raw`), its conversion, and how the
/// native's body borrows it (`Arg`, `&[u8]` for a `byte[]`).
pub(crate) trait FromJava: Sized {
    /// The JNI type of the argument.
    type Raw<'l>;
    /// What the body takes.
    type Arg<'a>
    where
        Self: 'a;
    /// Converts `raw`; `what` names the argument in an error ("null key").
    fn from_java<'l>(env: &mut JNIEnv<'l>, raw: Self::Raw<'l>, what: &str) -> JniResult<Self>;
    /// Lends the value to the body.
    fn arg(&self) -> Self::Arg<'_>;
}

macro_rules! from_java {
    ($($ty:ty: $raw:ty => $arg:ty, |$env:ident, $x:ident, $what:ident| $conv:expr, |$s:ident| $lend:expr;)*) => {$(
        impl FromJava for $ty {
            type Raw<'l> = $raw;
            type Arg<'a> = $arg;
            fn from_java<'l>($env: &mut JNIEnv<'l>, $x: $raw, $what: &str) -> JniResult<Self> {
                $conv
            }
            fn arg(&self) -> Self::Arg<'_> {
                let $s = self;
                $lend
            }
        }
    )*};
}

from_java! {
    jlong: jlong => jlong, |_env, x, _what| Ok(x), |s| *s;
    jint: jint => jint, |_env, x, _what| Ok(x), |s| *s;
    bool: jboolean => bool, |_env, x, _what| Ok(x == JNI_TRUE), |s| *s;
    // A `byte[]` that must not be null.
    JavaBytes: JByteArray<'l> => &'a [u8], |env, x, what| JavaBytes::copy(env, &x, what), |s| s;
    // A `byte[]` where null means none (an open bound, a delete, no metadata).
    Option<JavaBytes>: JByteArray<'l> => Option<&'a [u8]>,
        |env, x, what| nullable(x.is_null(), || JavaBytes::copy(env, &x, what)), |s| s.as_deref();
    String: JString<'l> => &'a str, |env, x, what| string(env, &x, what), |s| s;
    // A `String` where null means none (the memory engine's path).
    Option<String>: JString<'l> => Option<&'a str>,
        |env, x, what| nullable(x.is_null(), || string(env, &x, what)), |s| s.as_deref();
    Vec<String>: JObjectArray<'l> => &'a [String], |env, x, what| strings(env, &x, what), |s| s;
    Vec<jint>: JIntArray<'l> => &'a [jint], |env, x, what| {
        let mut out = vec![0; length(env, &x, what)?];
        Ok(env.get_int_array_region(&x, 0, &mut out).map(|()| out)?)
    }, |s| s;
    Vec<jlong>: JLongArray<'l> => &'a [jlong], |env, x, what| longs(env, &x, what), |s| s;
    OpenArgs: JLongArray<'l> => &'a OpenArgs,
        |env, x, what| Ok(OpenArgs::decode(&longs(env, &x, what)?)?), |s| s;
}

fn nullable<T>(null: bool, convert: impl FnOnce() -> JniResult<T>) -> JniResult<Option<T>> {
    (!null).then(convert).transpose()
}

fn length<'l>(
    env: &JNIEnv<'_>,
    array: &impl jni::objects::AsJArrayRaw<'l>,
    what: &str,
) -> JniResult<usize> {
    if array.as_ref().is_null() {
        return Err(Error::InvalidArgument(format!("null {what}")).into());
    }
    usize::try_from(env.get_array_length(array)?)
        .map_err(|_| Error::Internal("a Java array of negative length".into()).into())
}

fn longs(env: &JNIEnv<'_>, array: &JLongArray<'_>, what: &str) -> JniResult<Vec<jlong>> {
    let mut out = vec![0; length(env, array, what)?];
    Ok(env
        .get_long_array_region(array, 0, &mut out)
        .map(|()| out)?)
}

fn strings(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>, what: &str) -> JniResult<Vec<String>> {
    (0..length(env, array, what)?)
        .map(|i| {
            let index = jint::try_from(i).unwrap_or(jint::MAX);
            // One local frame per element: its local references are freed each time, so
            // any number of elements stays within the JVM's local-reference capacity.
            env.with_local_frame(4, |env| -> JniResult<String> {
                let element = env.get_object_array_element(array, index)?;
                string(env, &JString::from(element), what)
            })
        })
        .collect()
}

/// The offsets of a commit as Java passes them (three arrays of one length) as
/// (partition, offset or removal) pairs; [`super::natives::NO_OFFSET`] removes.
pub(crate) fn offsets(
    topics: &[String],
    partitions: &[jint],
    offsets: &[jlong],
) -> Result<Vec<(TopicPartition, Option<i64>)>> {
    if partitions.len() != topics.len() || offsets.len() != topics.len() {
        return Err(Error::InvalidArgument(
            "offset arrays differ in length".into(),
        ));
    }
    let pairs = topics.iter().zip(partitions).zip(offsets);
    let entry = |((t, p), o): ((&String, &jint), &jlong)| {
        let offset = (*o != super::natives::NO_OFFSET).then_some(*o);
        (TopicPartition::new(t.clone(), *p), offset)
    };
    Ok(pairs.map(entry).collect())
}

/// A native's result type: the JNI type it returns and how.
pub(crate) trait IntoJava {
    /// The JNI type returned.
    type Raw;
    /// Returned with an exception pending (Java ignores it then).
    const FALLBACK: Self::Raw;
    /// Converts the result.
    fn into_java(self, env: &mut JNIEnv<'_>) -> JniResult<Self::Raw>;
}

macro_rules! into_java {
    ($($ty:ty: $raw:ty = $fallback:expr, |$v:ident, $env:ident| $conv:expr;)*) => {$(
        impl IntoJava for $ty {
            type Raw = $raw;
            const FALLBACK: $raw = $fallback;
            fn into_java(self, $env: &mut JNIEnv<'_>) -> JniResult<$raw> {
                let $v = self;
                $conv
            }
        }
    )*};
}

into_java! {
    jlong: jlong = 0, |v, _env| Ok(v);
    (): () = (), |v, _env| Ok(v);
    bool: jboolean = 0, |v, _env| Ok(jboolean::from(v));
    // A `byte[]`, null for none.
    Option<Vec<u8>>: jbyteArray = std::ptr::null_mut(), |v, env| match v {
        None => Ok(std::ptr::null_mut()),
        Some(v) => Ok(env.byte_array_from_slice(&v)?.into_raw()),
    };
}

/// Arrays up to this many bytes are copied onto the stack (keys, and the values of most
/// stores); larger ones (packed batches) onto the heap.
const INLINE_BYTES: usize = 256;

/// The bytes of a Java array, copied once out of the JVM. A native call made per record
/// (get, put) copied its key and value into heap vectors, an allocation and a free each:
/// the small ones now stay on the stack.
// The inline variant is large on purpose: it lives on the stack for one native call.
#[allow(clippy::large_enum_variant)]
pub(crate) enum JavaBytes {
    /// Up to [`INLINE_BYTES`], the first `len` of `buf`.
    Inline {
        buf: [jni::sys::jbyte; INLINE_BYTES],
        len: usize,
    },
    /// Larger arrays.
    Heap(Vec<u8>),
}

impl JavaBytes {
    /// Copies the elements of `array`, refusing null.
    fn copy(env: &JNIEnv<'_>, array: &JByteArray<'_>, what: &str) -> JniResult<JavaBytes> {
        let len = length(env, array, what)?;
        if len > INLINE_BYTES {
            return Ok(JavaBytes::Heap(env.convert_byte_array(array)?));
        }
        let mut buf = [0; INLINE_BYTES];
        env.get_byte_array_region(array, 0, &mut buf[..len])?;
        Ok(JavaBytes::Inline { buf, len })
    }
}

impl std::ops::Deref for JavaBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            JavaBytes::Inline { buf, len } => {
                let bytes = &buf[..*len];
                // SAFETY: `jbyte` is `i8`, which has the size and alignment of `u8`, and every
                // bit pattern is a valid `u8`; the slice borrows `buf` for `&self`'s lifetime.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), bytes.len()) }
            }
            JavaBytes::Heap(v) => v,
        }
    }
}

/// A Java string as UTF-8. Strict: a string that is not valid Unicode (an unpaired
/// surrogate) is an invalid argument, never silently replaced by U+FFFD (which would name
/// another directory or topic).
pub(crate) fn string(env: &mut JNIEnv<'_>, s: &JString<'_>, what: &str) -> JniResult<String> {
    if s.is_null() {
        return Err(Error::InvalidArgument(format!("null {what}")).into());
    }
    let java = env.get_string(s)?;
    Ok(decode_java(java.to_bytes(), what)?)
}

/// Decodes a string in the JVM's modified UTF-8, refusing what is not valid Unicode.
pub(crate) fn decode_java(bytes: &[u8], what: &str) -> Result<String> {
    match cesu8::from_java_cesu8(bytes) {
        Ok(text) => Ok(text.into_owned()),
        Err(_) => Err(Error::InvalidArgument(format!(
            "{what} is not valid Unicode (it has an unpaired surrogate)"
        ))),
    }
}
