//! Names: the position lines that name an object (`ob=`, `cob=`), a source file (`fl=`, `fi=`,
//! `fe=`, `cfi=`/`cfl=`, `jfi=`) or a function (`fn=`, `cfn=`, `jfn=`), the compressed-name ids
//! (`(N) name` defines id N, `(N)` refers to it) and the images and symbols the names become.

use std::collections::HashMap;

use super::super::parse::{name_spec, NameSpec};
use super::{bad, ArcKind, Name, Reader};
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::{Image, Symbol};

/// Compressed-name ids `(N)` of one namespace (objects, files or functions). Callgrind shares
/// one table between `fl=`/`fi=`/`fe=`/`cfi=`/`cfl=`/`jfi=`, one between `fn=`/`cfn=`/`jfn=`
/// and one between `ob=`/`cob=`; ids persist to the end of the file.
#[derive(Default)]
pub(super) struct IdTable {
    /// Ids below 2^20; `None` where unset (an empty name's value is `u32::MAX`, and it is set).
    dense: Vec<Option<u32>>,
    sparse: HashMap<u64, u32>,
}

impl IdTable {
    /// Defines `id` as `value`.
    pub(super) fn set(&mut self, id: u64, value: u32) {
        if id < (1 << 20) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense[i] = Some(value);
        } else {
            self.sparse.insert(id, value);
        }
    }

    /// Every id set, with its value.
    pub(super) fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let dense = self.dense.iter().enumerate().filter_map(|(i, v)| Some((i as u64, (*v)?)));
        dense.chain(self.sparse.iter().map(|(&id, &v)| (id, v)))
    }

    /// The value of `id`, if defined.
    pub(super) fn get(&self, id: u64) -> Option<u32> {
        if id < (1 << 20) {
            self.dense.get(id as usize).copied().flatten()
        } else {
            self.sparse.get(&id).copied()
        }
    }
}

/// A compressed name `(id)` referred to before the line that defines it.
pub(super) struct ForwardName {
    pub(super) table: Table,
    pub(super) id: u64,
    /// The value given to it, named `(id)` until the definition comes.
    pub(super) value: u32,
    /// The line of the first reference.
    pub(super) line: u64,
    pub(super) defined: bool,
}

/// Whether `text` is Valgrind's name for an unknown source file, `???`, which reads as no file
/// (as KCachegrind reads it, and as the writer writes no file). An object named `???` keeps
/// that name: the writer leaves an unknown object empty.
pub(super) fn unknown_file(table: Table, text: &str) -> bool {
    table == Table::File && text == "???"
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Table {
    Object,
    File,
    Function,
}

impl Table {
    /// The namespace as messages name it, with the keys that share it.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Table::Object => "object (ob=, cob=)",
            Table::File => "file (fl=, fi=, fe=, cfi=, cfl=, jfi=)",
            Table::Function => "function (fn=, cfn=, jfn=)",
        }
    }
}

impl Reader {
    /// The image of object `ob` in the current process, created when first named.
    pub(super) fn image_of(&mut self, ob: Name) -> u32 {
        let p = self.process();
        let process = &mut self.profile.processes[p];
        *self.states[p].images.entry(ob).or_insert_with(|| {
            process.images.push(Image { id: process.images.len() as u64, file: ob, ..Image::default() });
            (process.images.len() - 1) as u32
        })
    }

    /// The symbol of function `name` defined in `file` in `image`, created when first named
    /// (in a part read on its own, a name defined before the part's start is filled in when
    /// the parts are joined).
    pub(super) fn symbol_of(&mut self, image: u32, name: u32, file: Name) -> u32 {
        let p = self.process();
        let img = &mut self.profile.processes[p].images[image as usize];
        let fn_names = &self.fn_names;
        let cont = &mut self.cont;
        let state = &mut self.states[p];
        let by_name = &mut state.by_name;
        *state.symbols.entry((image, name, file)).or_insert_with(|| {
            let text = match cont {
                // A name defined before the start of the part: known once the parts are joined.
                Some(c) => {
                    c.created(image, img.symbols.len() as u32, name);
                    if super::chunks::is_forward(name) {
                        ""
                    } else {
                        fn_names.get(name)
                    }
                }
                None => fn_names.get(name),
            };
            img.symbols.push(Symbol { name: text.to_string(), file, ..Symbol::default() });
            let symbol = (img.symbols.len() - 1) as u32;
            by_name.entry((image, name)).or_insert(symbol);
            symbol
        })
    }

    /// Resolves a name specification in one of the three namespaces.
    ///
    /// Older Callgrind versions refer to an id (`cob=(8)`) before the line that defines it
    /// (`ob=(8) name`): such a reference gets a value named `(8)` at once, renamed when the
    /// definition comes (see [`Reader::forwards`]).
    pub(super) fn name(&mut self, table: Table, value: &[u8]) -> Result<u32> {
        let spec = name_spec(value).map_err(bad)?;
        let (id, text) = match spec {
            NameSpec::Plain(t) => (None, t),
            NameSpec::Define(id, t) => (Some(id), t),
            NameSpec::Refer(id) => {
                if let Some(v) = self.ids(table).get(id) {
                    return Ok(v);
                }
                if let Some(c) = &mut self.cont {
                    // Defined before the start of the part, or later: told when parts are joined.
                    return Ok(c.forward(table, id));
                }
                let text = format!("({id})");
                let value = match table {
                    Table::Object | Table::File => self.profile.files.intern(&text),
                    Table::Function => self.fn_names.intern(&text),
                };
                self.set_id(table, id, value);
                self.forwards.push(ForwardName { table, id, value, line: self.line_no, defined: false });
                return Ok(value);
            }
        };
        let text = String::from_utf8_lossy(text);
        if let Some(id) = id {
            let pending = self.forwards.iter().position(|f| f.table == table && f.id == id && !f.defined);
            if let Some(k) = pending {
                // The definition of a name used before: the value in use takes the name.
                let f = &mut self.forwards[k];
                let renamed = match table {
                    Table::Object | Table::File if text.is_empty() || unknown_file(table, &text) => false,
                    Table::Object | Table::File => self.profile.files.rename(f.value, &text),
                    Table::Function => self.fn_names.rename(f.value, &text),
                };
                if renamed {
                    f.defined = true;
                    return Ok(f.value);
                }
            }
        }
        let value = match table {
            Table::Object | Table::File => {
                if text.is_empty() {
                    u32::MAX
                } else if unknown_file(table, &text) {
                    // Interned all the same, so that the names keep their order through a
                    // round trip (an object may be called `???` too).
                    self.profile.files.intern(&text);
                    u32::MAX
                } else {
                    self.profile.files.intern(&text)
                }
            }
            Table::Function => self.fn_names.intern(&text),
        };
        if let Some(id) = id {
            self.set_id(table, id, value);
        }
        Ok(value)
    }

    /// The ids defined so far in `table`'s namespace.
    fn ids(&self, table: Table) -> &IdTable {
        match table {
            Table::Object => &self.objects,
            Table::File => &self.files,
            Table::Function => &self.functions,
        }
    }

    /// Defines id `id` of `table`'s namespace as `value`.
    fn set_id(&mut self, table: Table, id: u64, value: u32) {
        match table {
            Table::Object => self.objects.set(id, value),
            Table::File => self.files.set(id, value),
            Table::Function => self.functions.set(id, value),
        }
    }

    /// An object or file name; `None` for the empty name (and for `???`, an unknown file).
    fn file_name(&mut self, table: Table, value: &[u8]) -> Result<Name> {
        let v = self.name(table, value)?;
        Ok(if v == u32::MAX { None } else { Some(v) })
    }

    /// Reads the position line `key=value`: the object, file or function named from here on
    /// (`ob=`, `fl=`, `fi=`/`fe=`, `fn=`), the target of the next call or jump (`cob=`, `cfi=`,
    /// `cfn=`, `jfi=`, `jfn=`), or the call or jump itself (handed to [`Reader::association`]).
    pub(super) fn spec(&mut self, key: &[u8], value: &[u8], findings: &mut Findings) -> Result<()> {
        match key {
            b"ob" => {
                self.ob = self.file_name(Table::Object, value)?;
                self.image = None;
                self.symbol = None;
            }
            b"fl" => {
                self.fl = self.file_name(Table::File, value)?;
                self.file = self.fl;
            }
            b"fi" | b"fe" => self.file = self.file_name(Table::File, value)?,
            b"fn" => {
                let name = self.name(Table::Function, value)?;
                self.file = self.fl;
                let image = match self.image {
                    Some(i) => i,
                    None => {
                        let i = self.image_of(self.ob);
                        self.image = Some(i);
                        i
                    }
                };
                self.symbol = Some(self.symbol_of(image, name, self.fl));
            }
            b"cob" => self.cob = Some(self.file_name(Table::Object, value)?),
            b"cfi" | b"cfl" => self.cfi = Some(self.file_name(Table::File, value)?),
            b"cfn" => self.cfn = Some(self.name(Table::Function, value)?),
            b"jfi" => self.jfi = Some(self.file_name(Table::File, value)?),
            b"jfn" => self.jfn = Some(self.name(Table::Function, value)?),
            b"calls" => self.association(ArcKind::Call, value, self.last)?,
            b"jump" => self.association(ArcKind::Jump, value, self.last)?,
            b"jcnd" => self.association(ArcKind::Jcnd, value, self.last)?,
            b"rcalls" => {
                // Written by old Callgrind versions for recursive calls; KCachegrind reads it
                // as calls=, with a warning.
                if !self.warned_keys.iter().any(|k| k == key) {
                    self.warned_keys.push(key.to_vec());
                    findings.warn(
                        Some(cfghub_model::error::Place::Line(self.line_no)),
                        "'rcalls=' (an old Callgrind form) read as 'calls='",
                    );
                }
                self.association(ArcKind::Call, value, self.last)?
            }
            _ => {
                if !self.warned_keys.iter().any(|k| k == key) {
                    self.warned_keys.push(key.to_vec());
                    findings.warn(
                        Some(cfghub_model::error::Place::Line(self.line_no)),
                        format!(
                            "'{}=' lines are not part of Callgrind format 1 as cfghub reads it; ignored",
                            String::from_utf8_lossy(key)
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}
