//! The natives of upgrading by prepare and swap (`KstateNative.isUpgrading`,
//! `KstateNative.upgradeBySwap`): the one native that calls back into Java while it runs.

use std::ops::ControlFlow;

use jni::objects::{JClass, JObject, JValue};
use jni::sys::{jboolean, jlong};
use jni::JNIEnv;

use super::guard::{guard, Failure};
use super::ops;
use crate::Error;

/// `boolean isUpgrading(long store)`: true while the store runs in upgrade mode (old-format
/// values still present, read converted).
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_isUpgrading<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) -> jboolean {
    guard(&mut env, 0, |_| Ok(jboolean::from(ops::is_upgrading(h)?)))
}

/// `long upgradeBySwap(long store, UpgradeProgress progress)`: upgrades a store in upgrade
/// mode by prepare and swap (`crate::bridge::upgrade_by_swap`), calling
/// `progress.onProgress(done, total)` (if not null) on this thread after each batch.
/// Returns the entries copied. An exception thrown by `progress` stops the swap (the store
/// stays as it was, in upgrade mode) and propagates to the caller as is.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_upgradeBySwap<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    progress: JObject<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let result = ops::upgrade_by_swap(h, &mut |done, total| {
            if progress.is_null() {
                return ControlFlow::Continue(());
            }
            let args = [
                JValue::Long(jlong::try_from(done).unwrap_or(jlong::MAX)),
                JValue::Long(jlong::try_from(total).unwrap_or(jlong::MAX)),
            ];
            match env.call_method(&progress, "onProgress", "(JJ)V", &args) {
                Ok(_) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(Error::Internal(format!(
                    "the progress callback failed: {e}"
                ))),
            }
        });
        match result {
            Ok(copied) => Ok(copied),
            // The callback's own exception is the one the caller sees.
            Err(_) if env.exception_check()? => Err(Failure::Pending),
            Err(e) => Err(e.into()),
        }
    })
}
