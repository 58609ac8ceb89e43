//! `StringIds`: every name in an nsys export is an integer id into this table. It is read once;
//! a string is interned into the IR only when an event uses it.

use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::{Defs, Location, Result, StrId};

use crate::db::{sqlite_error, Schema};

#[derive(Debug, Default)]
pub struct Strings {
    text: FxHashMap<i64, Box<str>>,
    interned: FxHashMap<i64, StrId>,
}

impl Strings {
    pub fn load(conn: &Connection, schema: &Schema) -> Result<Strings> {
        let Some(t) = schema.table("StringIds") else {
            return Ok(Strings::default());
        };
        let at = Location::Row {
            table: t.name.clone(),
            rowid: 0,
        };
        let err = |e| sqlite_error(at.clone(), "cannot read the string table", e);
        let sql = format!(
            "SELECT {}, {} FROM {}",
            t.col("id"),
            t.col("value"),
            t.sql_name()
        );
        let mut stmt = conn.prepare(&sql).map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut text = FxHashMap::default();
        while let Some(row) = rows.next().map_err(err)? {
            use rusqlite::types::ValueRef;
            let Ok(ValueRef::Integer(id)) = row.get_ref(0) else {
                continue;
            };
            let value = match row.get_ref(1) {
                Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => String::from_utf8_lossy(t).into(),
                Ok(ValueRef::Integer(i)) => i.to_string().into(),
                Ok(ValueRef::Real(f)) => f.to_string().into(),
                _ => continue,
            };
            text.insert(id, value);
        }
        Ok(Strings {
            text,
            interned: FxHashMap::default(),
        })
    }

    /// The text of string `id`, if the table has it.
    pub fn get(&self, id: i64) -> Option<&str> {
        self.text.get(&id).map(|s| &**s)
    }

    /// String `id` interned into `defs`; `None` when the id is not in the table.
    pub fn intern(&mut self, defs: &mut Defs, id: i64) -> Option<StrId> {
        if let Some(&s) = self.interned.get(&id) {
            return Some(s);
        }
        let s = defs.intern(self.text.get(&id)?);
        self.interned.insert(id, s);
        Some(s)
    }
}
