//! Regions (one per slice name, category and instant-ness) and attributes (one per argument
//! key and value type, plus tracex's own per-event fields), interned while events are written
//! and defined in the global definitions at the end.

use otf2_sys as sys;
use rustc_hash::FxHashMap;
use tracex_ir::kind::{classify, SliceKind};
use tracex_ir::{Args, Defs, StrId, Value};

use super::strings::Strings;
use crate::ffi::{ArchiveWriter, AttrList, AttrValue, GlobalDefWriter, Result};
use crate::identity::{self, Internal};

/// The GPU paradigm of a category: HIP for ROCm's names (rocprofiler-sdk's domains, `hip...`,
/// `hsa...`), CUDA otherwise.
fn gpu_paradigm(cat: Option<&str>) -> u32 {
    let c = cat.unwrap_or("").to_ascii_lowercase();
    let rocm = c.contains("hip")
        || c.contains("hsa")
        || matches!(c.as_str(), "kernel_dispatch" | "memory_copy");
    match rocm {
        true => sys::OTF2_PARADIGM_HIP,
        false => sys::OTF2_PARADIGM_CUDA,
    }
}

/// OTF2 paradigm and region role for a slice category.
pub fn paradigm_role(cat: Option<&str>) -> (u32, u32) {
    use sys::*;
    match classify(cat) {
        SliceKind::CudaApi => (gpu_paradigm(cat), OTF2_REGION_ROLE_WRAPPER),
        SliceKind::Kernel | SliceKind::Memset | SliceKind::Sync => {
            (gpu_paradigm(cat), OTF2_REGION_ROLE_FUNCTION)
        }
        SliceKind::Memcpy => (gpu_paradigm(cat), OTF2_REGION_ROLE_DATA_TRANSFER),
        SliceKind::Nvtx | SliceKind::NvtxKernel => (OTF2_PARADIGM_USER, OTF2_REGION_ROLE_CODE),
        SliceKind::Mpi => (OTF2_PARADIGM_MPI, OTF2_REGION_ROLE_FUNCTION),
        SliceKind::Library => {
            let c = cat.unwrap_or("").to_ascii_lowercase();
            if c.contains("openmp") {
                (OTF2_PARADIGM_OPENMP, OTF2_REGION_ROLE_FUNCTION)
            } else if c.contains("openacc") {
                (OTF2_PARADIGM_OPENACC, OTF2_REGION_ROLE_FUNCTION)
            } else {
                (OTF2_PARADIGM_CUDA, OTF2_REGION_ROLE_WRAPPER)
            }
        }
        SliceKind::Osrt | SliceKind::Other => (OTF2_PARADIGM_USER, OTF2_REGION_ROLE_FUNCTION),
    }
}

struct Region {
    name: sys::OTF2_StringRef,
    cat: Option<StrId>,
    description: sys::OTF2_StringRef,
    paradigm: u32,
    role: u32,
    instant: bool,
}

#[derive(Default)]
pub struct Regions {
    map: FxHashMap<(StrId, Option<StrId>, bool), u32>,
    list: Vec<Region>,
    /// The region of stack nodes never defined, named `?`.
    undefined: Option<u32>,
}

impl Regions {
    /// The region of slices (or instants) named `name` in category `cat`.
    pub fn get(
        &mut self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        defs: &Defs,
        name: StrId,
        cat: Option<StrId>,
        instant: bool,
    ) -> Result<sys::OTF2_RegionRef> {
        if let Some(&r) = self.map.get(&(name, cat, instant)) {
            return Ok(sys::OTF2_RegionRef(r));
        }
        let cat_text = defs.opt_str(cat);
        let (paradigm, role) = paradigm_role(cat_text);
        let region = Region {
            name: strings.id(ar, defs.str(name), name)?,
            cat,
            description: match cat {
                Some(c) => strings.id(ar, defs.str(c), c)?,
                None => strings.name(ar, "")?,
            },
            paradigm,
            role,
            instant,
        };
        let r = self.list.len() as u32;
        self.list.push(region);
        self.map.insert((name, cat, instant), r);
        Ok(sys::OTF2_RegionRef(r))
    }

    /// The region `?` of a stack node the trace never defined.
    pub fn undefined_frame(
        &mut self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
    ) -> Result<sys::OTF2_RegionRef> {
        if let Some(r) = self.undefined {
            return Ok(sys::OTF2_RegionRef(r));
        }
        let (paradigm, role) = paradigm_role(None);
        let r = self.list.len() as u32;
        self.list.push(Region {
            name: strings.name(ar, "?")?,
            cat: None,
            description: strings.name(ar, "")?,
            paradigm,
            role,
            instant: false,
        });
        self.undefined = Some(r);
        Ok(sys::OTF2_RegionRef(r))
    }

    /// Writes the regions, then one REGIONS group per category (named by it) and the group
    /// marking instant regions. Returns the next free group ref.
    pub fn write_defs(
        &self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        defs: &Defs,
        mut next_group: u32,
    ) -> Result<u32> {
        for (i, r) in self.list.iter().enumerate() {
            ar.global_defs()?.region(
                sys::OTF2_RegionRef(i as u32),
                r.name,
                r.description,
                r.role,
                r.paradigm,
            )?;
        }
        let mut by_cat: FxHashMap<StrId, Vec<u64>> = FxHashMap::default();
        let mut instants = Vec::new();
        for (i, r) in self.list.iter().enumerate() {
            if let Some(c) = r.cat {
                by_cat.entry(c).or_default().push(i as u64);
            }
            if r.instant {
                instants.push(i as u64);
            }
        }
        let mut cats: Vec<_> = by_cat.into_iter().collect();
        cats.sort_by_key(|(c, _)| *c);
        let mut groups: Vec<(sys::OTF2_StringRef, Vec<u64>)> = Vec::new();
        for (c, members) in cats {
            groups.push((strings.id(ar, defs.str(c), c)?, members));
        }
        if !instants.is_empty() {
            groups.push((strings.name(ar, identity::INSTANT_GROUP)?, instants));
        }
        for (name, members) in groups {
            write_group(
                ar.global_defs()?,
                next_group,
                name,
                sys::OTF2_GROUP_TYPE_REGIONS,
                &members,
            )?;
            next_group += 1;
        }
        Ok(next_group)
    }
}

fn write_group(
    g: &mut GlobalDefWriter,
    r: u32,
    name: sys::OTF2_StringRef,
    ty: u32,
    members: &[u64],
) -> Result<()> {
    g.group(
        sys::OTF2_GroupRef(r),
        name,
        ty,
        sys::OTF2_PARADIGM_UNKNOWN,
        members,
    )
}

/// How an IR value is stored in an attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ArgKind {
    Int,
    UInt,
    Float,
    Str,
    /// A string with NUL bytes, stored JSON-escaped.
    Escaped,
    Json,
    Bool,
    Null,
}

impl ArgKind {
    fn of(defs: &Defs, v: &Value) -> ArgKind {
        match v {
            Value::Null => ArgKind::Null,
            Value::Bool(_) => ArgKind::Bool,
            Value::Int(_) => ArgKind::Int,
            Value::UInt(_) => ArgKind::UInt,
            Value::Float(_) => ArgKind::Float,
            Value::Str(s) if s.contains('\0') => ArgKind::Escaped,
            Value::Str(_) => ArgKind::Str,
            Value::Sym(s) if defs.str(*s).contains('\0') => ArgKind::Escaped,
            Value::Sym(_) => ArgKind::Str,
            Value::Json(_) | Value::JsonSym(_) => ArgKind::Json,
        }
    }

    fn otf2_type(self) -> u32 {
        match self {
            ArgKind::Int => sys::OTF2_TYPE_INT64,
            ArgKind::UInt => sys::OTF2_TYPE_UINT64,
            ArgKind::Float => sys::OTF2_TYPE_DOUBLE,
            ArgKind::Str | ArgKind::Escaped | ArgKind::Json => sys::OTF2_TYPE_STRING,
            ArgKind::Bool | ArgKind::Null => sys::OTF2_TYPE_UINT8,
        }
    }

    fn description(self) -> &'static str {
        match self {
            ArgKind::Json => identity::JSON_VALUE,
            ArgKind::Escaped => identity::ESCAPED_VALUE,
            ArgKind::Bool => identity::BOOL_VALUE,
            ArgKind::Null => identity::NULL_VALUE,
            _ => "",
        }
    }
}

/// The OTF2 type tracex writes an internal attribute with.
fn otf2_type(i: Internal) -> u32 {
    match i {
        Internal::Open | Internal::FlowRole | Internal::FlowBind => sys::OTF2_TYPE_UINT8,
        Internal::Color | Internal::FlowName | Internal::FlowCat | Internal::SampleName => {
            sys::OTF2_TYPE_STRING
        }
        Internal::ThreadTs | Internal::ThreadDur | Internal::Weight => sys::OTF2_TYPE_INT64,
        Internal::Stack => sys::OTF2_TYPE_CALLING_CONTEXT,
        Internal::Flow => sys::OTF2_TYPE_UINT64,
        Internal::Cpu => sys::OTF2_TYPE_UINT32,
    }
}

struct Attribute {
    name: sys::OTF2_StringRef,
    description: sys::OTF2_StringRef,
    ty: u32,
}

#[derive(Default)]
pub struct Attributes {
    args: FxHashMap<(StrId, ArgKind), u32>,
    internal: FxHashMap<Internal, u32>,
    list: Vec<Attribute>,
    /// NaN or infinite floats are stored as they are (OTF2 doubles carry them).
    pub non_finite: u64,
}

impl Attributes {
    fn add(
        &mut self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        name: sys::OTF2_StringRef,
        description: &str,
        ty: u32,
    ) -> Result<u32> {
        let r = self.list.len() as u32;
        self.list.push(Attribute {
            name,
            description: strings.name(ar, description)?,
            ty,
        });
        Ok(r)
    }

    pub fn internal(
        &mut self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        i: Internal,
    ) -> Result<sys::OTF2_AttributeRef> {
        if let Some(&r) = self.internal.get(&i) {
            return Ok(sys::OTF2_AttributeRef(r));
        }
        let name = strings.name(ar, i.name())?;
        let r = self.add(ar, strings, name, identity::INTERNAL, otf2_type(i))?;
        self.internal.insert(i, r);
        Ok(sys::OTF2_AttributeRef(r))
    }

    /// Appends `args` to `list` as typed attributes.
    pub fn add_args(
        &mut self,
        ar: &mut ArchiveWriter,
        strings: &mut Strings,
        defs: &Defs,
        args: &Args,
        list: &mut AttrList,
    ) -> Result<()> {
        for a in args {
            let kind = ArgKind::of(defs, &a.value);
            let attr = match self.args.get(&(a.key, kind)) {
                Some(&r) => r,
                None => {
                    let name = strings.id(ar, defs.str(a.key), a.key)?;
                    let r = self.add(ar, strings, name, kind.description(), kind.otf2_type())?;
                    self.args.insert((a.key, kind), r);
                    r
                }
            };
            let v = match &a.value {
                Value::Null => AttrValue::U8(0),
                Value::Bool(b) => AttrValue::U8(*b as u8),
                Value::Int(i) => AttrValue::I64(*i),
                Value::UInt(u) => AttrValue::U64(*u),
                Value::Float(f) => {
                    if !f.is_finite() {
                        self.non_finite += 1;
                    }
                    AttrValue::F64(*f)
                }
                Value::Str(_) | Value::Sym(_) if kind == ArgKind::Escaped => {
                    let s = a.value.text(defs).expect("a string value");
                    let text = serde_json::to_string(s).expect("a string serializes");
                    AttrValue::String(strings.value(ar, &text)?)
                }
                Value::Str(s) | Value::Json(s) => AttrValue::String(strings.value(ar, s)?),
                Value::Sym(s) | Value::JsonSym(s) => {
                    AttrValue::String(strings.value(ar, defs.str(*s))?)
                }
            };
            list.add(sys::OTF2_AttributeRef(attr), v)?;
        }
        Ok(())
    }

    pub fn write_defs(&self, g: &mut GlobalDefWriter) -> Result<()> {
        for (i, a) in self.list.iter().enumerate() {
            g.attribute(
                sys::OTF2_AttributeRef(i as u32),
                a.name,
                a.description,
                a.ty as u8,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_choose_paradigm_and_role() {
        use sys::*;
        assert_eq!(
            paradigm_role(Some("cuda_runtime")),
            (OTF2_PARADIGM_CUDA, OTF2_REGION_ROLE_WRAPPER)
        );
        assert_eq!(
            paradigm_role(Some("kernel")),
            (OTF2_PARADIGM_CUDA, OTF2_REGION_ROLE_FUNCTION)
        );
        assert_eq!(
            paradigm_role(Some("gpu_memcpy")),
            (OTF2_PARADIGM_CUDA, OTF2_REGION_ROLE_DATA_TRANSFER)
        );
        assert_eq!(
            paradigm_role(Some("nvtx")),
            (OTF2_PARADIGM_USER, OTF2_REGION_ROLE_CODE)
        );
        // rocprofv3's categories
        assert_eq!(
            paradigm_role(Some("kernel_dispatch")),
            (OTF2_PARADIGM_HIP, OTF2_REGION_ROLE_FUNCTION)
        );
        assert_eq!(
            paradigm_role(Some("memory_copy")),
            (OTF2_PARADIGM_HIP, OTF2_REGION_ROLE_DATA_TRANSFER)
        );
        assert_eq!(
            paradigm_role(Some("hip_api")),
            (OTF2_PARADIGM_HIP, OTF2_REGION_ROLE_WRAPPER)
        );
        assert_eq!(
            paradigm_role(Some("mpi")),
            (OTF2_PARADIGM_MPI, OTF2_REGION_ROLE_FUNCTION)
        );
        assert_eq!(
            paradigm_role(Some("openmp")),
            (OTF2_PARADIGM_OPENMP, OTF2_REGION_ROLE_FUNCTION)
        );
        assert_eq!(
            paradigm_role(None),
            (OTF2_PARADIGM_USER, OTF2_REGION_ROLE_FUNCTION)
        );
        for i in Internal::ALL {
            assert_eq!(Internal::from_name(i.name()), Some(i));
        }
    }
}
