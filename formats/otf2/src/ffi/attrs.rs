//! Typed OTF2 values (attributes, properties) and attribute lists.

use otf2_sys as sys;

use super::error::{check, null_handle, Result};

/// A value as OTF2 types it: numbers, a string reference, or a reference to another
/// definition (kept as its raw id and type).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AttrValue {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    String(sys::OTF2_StringRef),
    /// A reference to a definition (`OTF2_TYPE_REGION`, `..._LOCATION`, ...).
    Ref {
        ty: sys::OTF2_Type,
        id: u64,
    },
}

impl AttrValue {
    /// The OTF2 type and union value.
    pub fn to_raw(self) -> (sys::OTF2_Type, sys::OTF2_AttributeValue) {
        let mut v = sys::OTF2_AttributeValue::default();
        let ty = match self {
            AttrValue::U8(x) => {
                v.uint8 = x;
                sys::OTF2_TYPE_UINT8
            }
            AttrValue::U16(x) => {
                v.uint16 = x;
                sys::OTF2_TYPE_UINT16
            }
            AttrValue::U32(x) => {
                v.uint32 = x;
                sys::OTF2_TYPE_UINT32
            }
            AttrValue::U64(x) => {
                v.uint64 = x;
                sys::OTF2_TYPE_UINT64
            }
            AttrValue::I8(x) => {
                v.int8 = x;
                sys::OTF2_TYPE_INT8
            }
            AttrValue::I16(x) => {
                v.int16 = x;
                sys::OTF2_TYPE_INT16
            }
            AttrValue::I32(x) => {
                v.int32 = x;
                sys::OTF2_TYPE_INT32
            }
            AttrValue::I64(x) => {
                v.int64 = x;
                sys::OTF2_TYPE_INT64
            }
            AttrValue::F32(x) => {
                v.float32 = x;
                sys::OTF2_TYPE_FLOAT
            }
            AttrValue::F64(x) => {
                v.float64 = x;
                sys::OTF2_TYPE_DOUBLE
            }
            AttrValue::String(s) => {
                v.stringRef = s;
                sys::OTF2_TYPE_STRING
            }
            AttrValue::Ref { ty, id } => {
                // 64-bit refs (locations) use the full width, all others the low 32 bits.
                if ty == sys::OTF2_TYPE_LOCATION as sys::OTF2_Type {
                    v.uint64 = id;
                } else {
                    v.uint32 = id as u32;
                }
                return (ty, v);
            }
        };
        (ty as sys::OTF2_Type, v)
    }

    /// Decodes a typed union value.
    pub fn from_raw(ty: sys::OTF2_Type, v: sys::OTF2_AttributeValue) -> AttrValue {
        // SAFETY: each arm reads the union field that `ty` says is the valid one.
        unsafe {
            match ty as u32 {
                sys::OTF2_TYPE_UINT8 => AttrValue::U8(v.uint8),
                sys::OTF2_TYPE_UINT16 => AttrValue::U16(v.uint16),
                sys::OTF2_TYPE_UINT32 => AttrValue::U32(v.uint32),
                sys::OTF2_TYPE_UINT64 => AttrValue::U64(v.uint64),
                sys::OTF2_TYPE_INT8 => AttrValue::I8(v.int8),
                sys::OTF2_TYPE_INT16 => AttrValue::I16(v.int16),
                sys::OTF2_TYPE_INT32 => AttrValue::I32(v.int32),
                sys::OTF2_TYPE_INT64 => AttrValue::I64(v.int64),
                sys::OTF2_TYPE_FLOAT => AttrValue::F32(v.float32),
                sys::OTF2_TYPE_DOUBLE => AttrValue::F64(v.float64),
                sys::OTF2_TYPE_STRING => AttrValue::String(v.stringRef),
                sys::OTF2_TYPE_LOCATION => AttrValue::Ref { ty, id: v.uint64 },
                _ => AttrValue::Ref {
                    ty,
                    id: v.uint32 as u64,
                },
            }
        }
    }
}

/// An owned OTF2 attribute list, reused from event to event (libotf2 empties it when an event
/// record is written).
pub struct AttrList {
    raw: *mut sys::OTF2_AttributeList,
}

impl AttrList {
    pub fn new() -> Result<AttrList> {
        // SAFETY: plain constructor; NULL means out of memory.
        let raw = unsafe { sys::OTF2_AttributeList_New() };
        if raw.is_null() {
            return Err(null_handle("OTF2_AttributeList_New"));
        }
        Ok(AttrList { raw })
    }

    pub fn add(&mut self, attr: sys::OTF2_AttributeRef, value: AttrValue) -> Result<()> {
        let (ty, v) = value.to_raw();
        // SAFETY: `raw` is a live list owned by self.
        check(
            unsafe { sys::OTF2_AttributeList_AddAttribute(self.raw, attr, ty, v) },
            "OTF2_AttributeList_AddAttribute",
        )
    }

    pub fn len(&self) -> u32 {
        // SAFETY: `raw` is a live list owned by self.
        unsafe { sys::OTF2_AttributeList_GetNumberOfElements(self.raw) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the list (after a failed write, so the next event does not inherit attributes).
    pub fn clear(&mut self) {
        // SAFETY: `raw` is a live list owned by self.
        let _ = unsafe { sys::OTF2_AttributeList_RemoveAllAttributes(self.raw) };
    }

    /// The pointer to pass to an event writer: NULL when empty, which writes no attribute record.
    pub(crate) fn as_event_arg(&mut self) -> *mut sys::OTF2_AttributeList {
        if self.is_empty() {
            std::ptr::null_mut()
        } else {
            self.raw
        }
    }
}

impl Drop for AttrList {
    fn drop(&mut self) {
        // SAFETY: `raw` came from OTF2_AttributeList_New and is deleted once.
        let _ = unsafe { sys::OTF2_AttributeList_Delete(self.raw) };
    }
}

/// The attributes of an event being read, as (attribute ref, value) pairs.
///
/// # Safety
/// `list` must be NULL or a list libotf2 passed to the running callback.
pub unsafe fn read_list(list: *mut sys::OTF2_AttributeList, out: &mut Vec<(u32, AttrValue)>) {
    out.clear();
    if list.is_null() {
        return;
    }
    // SAFETY: the caller guarantees `list` is live for the callback.
    let n = unsafe { sys::OTF2_AttributeList_GetNumberOfElements(list) };
    for i in 0..n {
        let mut attr = sys::OTF2_AttributeRef::default();
        let mut ty: sys::OTF2_Type = 0;
        let mut v = sys::OTF2_AttributeValue::default();
        // SAFETY: index within bounds; out-parameters are valid.
        let rc = unsafe {
            sys::OTF2_AttributeList_GetAttributeByIndex(list, i, &mut attr, &mut ty, &mut v)
        };
        if rc == sys::OTF2_ErrorCode::OTF2_SUCCESS {
            out.push((attr.0, AttrValue::from_raw(ty, v)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_union() {
        for v in [
            AttrValue::U8(7),
            AttrValue::U64(u64::MAX),
            AttrValue::I64(-5),
            AttrValue::F64(1.5),
            AttrValue::String(sys::OTF2_StringRef(42)),
            AttrValue::Ref {
                ty: sys::OTF2_TYPE_LOCATION as u8,
                id: 1 << 40,
            },
            AttrValue::Ref {
                ty: sys::OTF2_TYPE_CALLING_CONTEXT as u8,
                id: 9,
            },
        ] {
            let (ty, raw) = v.to_raw();
            assert_eq!(AttrValue::from_raw(ty, raw), v);
        }
        let mut l = AttrList::new().unwrap();
        l.add(sys::OTF2_AttributeRef(0), AttrValue::I64(3)).unwrap();
        assert_eq!(l.len(), 1);
        l.clear();
        assert!(l.is_empty());
    }
}
