//! The one conversion point from Rust results and panics to Java exceptions.

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::{JThrowable, JValue};
use jni::JNIEnv;

use crate::{Error, ErrorCode};

/// Java class thrown for a closed store or iterator (a subclass of Kafka's
/// `InvalidStateStoreException`).
pub const INVALID_STATE_CLASS: &str = "dev/kstate/streams/KstateInvalidStateStoreException";
/// Java class thrown for every other failure (a subclass of Kafka's
/// `ProcessorStateException`).
pub const PROCESSOR_STATE_CLASS: &str = "dev/kstate/streams/KstateProcessorStateException";

/// Why a native call failed.
pub(crate) enum Failure {
    /// A kstate error, to be thrown as a typed exception.
    Core(Error),
    /// A JNI call already left a Java exception pending; it is propagated as is.
    Pending,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        match e {
            jni::errors::Error::JavaException => Failure::Pending,
            other => Failure::Core(Error::Internal(format!("JNI: {other}"))),
        }
    }
}

/// Result of an `_impl` function.
pub(crate) type JniResult<T> = std::result::Result<T, Failure>;

/// The Java exception class an error code is thrown as: closed stores, closed iterators
/// and stale handles are `InvalidStateStoreException`s (Kafka Streams treats them as "the
/// store migrated or closed"), everything else a `ProcessorStateException`.
pub fn exception_class_for(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::StoreClosed | ErrorCode::InvalidHandle | ErrorCode::IteratorClosed => {
            INVALID_STATE_CLASS
        }
        _ => PROCESSOR_STATE_CLASS,
    }
}

/// Runs `body` for a native method: a panic is caught and an error becomes a pending Java
/// exception; `fallback` is then returned to the JVM, which ignores it because an
/// exception is pending.
pub(crate) fn guard<'local, T>(
    env: &mut JNIEnv<'local>,
    fallback: T,
    body: impl FnOnce(&mut JNIEnv<'local>) -> JniResult<T>,
) -> T {
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&mut *env)));
    let failure = match outcome {
        Ok(Ok(value)) => return value,
        Ok(Err(failure)) => failure,
        Err(payload) => Failure::Core(Error::from_panic(payload.as_ref())),
    };
    if let Failure::Core(error) = failure {
        // Throwing must not panic either: a failure here leaves at most a less precise
        // exception pending.
        let _ = catch_unwind(AssertUnwindSafe(|| throw(env, &error)));
    }
    fallback
}

fn throw(env: &mut JNIEnv<'_>, error: &Error) {
    if env.exception_check().unwrap_or(true) {
        return; // an exception is already pending; keep it
    }
    let code = error.code();
    let message = format!("kstate {}: {error}", code.name());
    if throw_typed(env, exception_class_for(code), &message, code.as_i32()).is_ok() {
        return;
    }
    if env.exception_check().unwrap_or(true) {
        return; // e.g. NoClassDefFoundError while looking up the class: report that one
    }
    let _ = env.throw_new("java/lang/IllegalStateException", message);
}

fn throw_typed(
    env: &mut JNIEnv<'_>,
    class: &str,
    message: &str,
    code: i32,
) -> jni::errors::Result<()> {
    let jmessage = env.new_string(message)?;
    let object = env.new_object(
        class,
        "(Ljava/lang/String;I)V",
        &[JValue::Object(&jmessage), JValue::Int(code)],
    )?;
    env.throw(JThrowable::from(object))
}
