//! Packed byte layouts exchanged with Java in one crossing.
//!
//! Entry batch (putAll, restore, range fetch), repeated until the end of the array:
//! `[i32 BE key length][key][i32 BE value length, -1 = null value][value]`.
//! All integers are big-endian, as Java's `ByteBuffer` writes them by default.

use crate::{Error, Result};

/// Length marker of a null value (a delete in putAll/restore).
pub const NULL_VALUE: i32 = -1;

/// One decoded entry: key and raw value (`None` = null value).
pub type Entry<'a> = (&'a [u8], Option<&'a [u8]>);

/// Splits a packed batch into `(key, value or None)` slices borrowing from `buf`.
///
/// # Errors
/// [`Error::InvalidArgument`] when the buffer is truncated or a length is negative
/// (other than the null-value marker) or runs past the end.
pub fn decode_entries(buf: &[u8]) -> Result<Vec<Entry<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < buf.len() {
        let key_len = read_len(buf, &mut pos)?
            .ok_or_else(|| Error::InvalidArgument("null key in packed batch".into()))?;
        let key = take(buf, &mut pos, key_len)?;
        let value = match read_len(buf, &mut pos)? {
            None => None,
            Some(n) => Some(take(buf, &mut pos, n)?),
        };
        out.push((key, value));
    }
    Ok(out)
}

/// Appends one entry to a packed batch.
pub fn encode_entry(out: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) -> Result<()> {
    out.extend_from_slice(&len_i32(key.len())?.to_be_bytes());
    out.extend_from_slice(key);
    match value {
        None => out.extend_from_slice(&NULL_VALUE.to_be_bytes()),
        Some(v) => {
            out.extend_from_slice(&len_i32(v.len())?.to_be_bytes());
            out.extend_from_slice(v);
        }
    }
    Ok(())
}

fn len_i32(len: usize) -> Result<i32> {
    i32::try_from(len)
        .map_err(|_| Error::InvalidArgument(format!("{len} bytes do not fit a Java array")))
}

fn read_len(buf: &[u8], pos: &mut usize) -> Result<Option<usize>> {
    let bytes = take(buf, pos, 4)?;
    let mut word = [0u8; 4];
    word.copy_from_slice(bytes);
    match i32::from_be_bytes(word) {
        NULL_VALUE => Ok(None),
        n if n < 0 => Err(Error::InvalidArgument(format!(
            "negative length {n} in packed batch"
        ))),
        // Non-negative i32 always fits usize on the 64-bit targets kstate supports.
        n => Ok(Some(n as usize)),
    }
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8]> {
    let end = pos
        .checked_add(n)
        .filter(|&end| end <= buf.len())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "packed batch truncated: need {n} bytes at offset {}, have {}",
                *pos,
                buf.len()
            ))
        })?;
    let slice = &buf[*pos..end];
    *pos = end;
    Ok(slice)
}
