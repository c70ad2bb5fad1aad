//! cfghub as a Python module (`import cfghub`): profiles read into the model once and then
//! summarised, handed to pyarrow as tables or written in any format; `convert` and `merge` as
//! the command line runs them.
//!
//! Keyword arguments are the command line's options (`from_` for `--from`, `address_step` for
//! `--address-step`, a list for a repeated option, `True` for a flag), so that every option
//! the command line has reaches the module without a second description of it. The work runs
//! without the GIL; errors are exceptions of the module carrying the command line's message
//! and its parts (file, line or byte, hint).

use std::ffi::c_void;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyString, PyTuple};

use cfghub::cli::embed;
use cfghub::error::{Error as CfghubError, ErrorKind, Place};

pyo3::create_exception!(
    cfghub,
    Error,
    PyException,
    "Any error of cfghub: its `message`, and where known the `file`, `line`, `byte` or `path`\n\
     (a place in a JSON document) it concerns and a `hint`; `str()` is the command line's message."
);
pyo3::create_exception!(cfghub, InputError, Error, "The input is not valid in its format.");
pyo3::create_exception!(
    cfghub,
    UsageError,
    Error,
    "What was asked is impossible (an unknown format or option, an output that is an input)."
);
pyo3::create_exception!(cfghub, FileError, Error, "The operating system refused a read or a write.");
pyo3::create_exception!(cfghub, UnsupportedError, Error, "A format cannot express what was asked of it.");

/// The exception of a cfghub error, its parts as attributes.
fn exception(py: Python<'_>, e: CfghubError) -> PyErr {
    let text = e.to_string();
    let err = match e.kind {
        ErrorKind::Input => InputError::new_err(text),
        ErrorKind::Usage => UsageError::new_err(text),
        ErrorKind::Io => FileError::new_err(text),
        ErrorKind::Unsupported => UnsupportedError::new_err(text),
    };
    let value = err.value(py);
    let (line, byte, path) = match &e.place {
        Some(Place::Line(n)) => (Some(*n), None, None),
        Some(Place::Byte(n)) => (None, Some(*n), None),
        Some(Place::Path(p)) => (None, None, Some(p.clone())),
        None => (None, None, None),
    };
    let set = || -> PyResult<()> {
        value.setattr("message", &e.message)?;
        value.setattr("file", &e.file)?;
        value.setattr("line", line)?;
        value.setattr("byte", byte)?;
        value.setattr("path", path)?;
        value.setattr("hint", &e.hint)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// The command line's options of keyword arguments: `from_=x` is `--from x`, `address_step=4`
/// `--address-step 4`, `True` a flag (`False` and `None` nothing), a list or tuple the option
/// once per item, `labels={"k": "v"}` `--label k=v`, a path-like its path.
fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<String>> {
    let mut out = Vec::new();
    let Some(kwargs) = kwargs else {
        return Ok(out);
    };
    for (key, value) in kwargs.iter() {
        let key: String = key.extract()?;
        let flag = format!("--{}", key.trim_end_matches('_').replace('_', "-"));
        if value.is_none() {
            continue;
        }
        if let Ok(b) = value.cast::<PyBool>() {
            if b.is_true() {
                out.push(flag);
            }
            continue;
        }
        if key == "labels" {
            let labels = value.cast::<PyDict>().map_err(|_| {
                UsageError::new_err("labels: a dict of label keys to values, e.g. {\"service\": \"web\"}")
            })?;
            for (k, v) in labels.iter() {
                out.push("--label".into());
                out.push(format!("{}={}", text(&k)?, text(&v)?));
            }
            continue;
        }
        if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
            for item in value.try_iter()? {
                out.push(flag.clone());
                out.push(text(&item?)?);
            }
            continue;
        }
        out.push(flag);
        out.push(text(&value)?);
    }
    Ok(out)
}

/// A value as the command line spells it: a path-like's path, anything else's `str()`.
fn text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return value.extract();
    }
    let os = value.py().import("os")?;
    match os.call_method1("fspath", (value,)) {
        Ok(path) => path.extract(),
        Err(_) => Ok(value.str()?.to_string()),
    }
}

/// The bytes of a source that is not a path: `bytes` kept without a copy, `bytearray` copied
/// once, and any other object with the buffer protocol (a `memoryview`, a `pyarrow.Buffer`,
/// a NumPy array of bytes) copied once through `memoryview`. `None` for a path (a `str` or
/// path-like).
fn bytes_of(value: &Bound<'_, PyAny>) -> PyResult<Option<PyBackedBytes>> {
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(Some(b.clone().into()));
    }
    if let Ok(b) = value.cast::<PyByteArray>() {
        return Ok(Some(b.clone().into()));
    }
    if value.is_instance_of::<PyString>() || value.hasattr("__fspath__")? {
        return Ok(None);
    }
    let view = value.py().get_type::<PyMemoryView>().call1((value,)).map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "a profile is read from a path (str or path-like) or from bytes, not from {}",
            value.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    Ok(Some(view.call_method0("tobytes")?.cast_into::<PyBytes>()?.into()))
}

/// A profile read into cfghub's model: summarise it (`info`), take its tables (`tables`) or
/// write it in any format (`write`), as often as needed without reading it again.
#[pyclass(frozen, module = "cfghub")]
struct Profile {
    inner: embed::Profile,
}

#[pymethods]
impl Profile {
    /// The input's name: its path, or the name the bytes were given.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The format it was read as (`pprof`, `callgrind`, ...).
    #[getter]
    fn format(&self) -> &'static str {
        self.inner.loaded.format.name
    }

    /// The names of its events (what its values count: `samples`, `cpu`, `Ir`, ...).
    #[getter]
    fn events(&self) -> Vec<String> {
        self.inner.loaded.profile.events.iter().map(|e| e.name.clone()).collect()
    }

    /// What `cfghub info --json` prints of it, as a dict: processes, threads, images, edges,
    /// the `top` hottest routines and loops, samples, memory.
    #[pyo3(signature = (top = 10))]
    fn info<'py>(&self, py: Python<'py>, top: usize) -> PyResult<Bound<'py, PyAny>> {
        let json = py.detach(|| embed::info_json(&self.inner, top)).map_err(|e| exception(py, e))?;
        py.import("json")?.call_method1("loads", (json,))
    }

    /// Its tables, as the `tables` format writes them (docs/formats/tables.md), as a dict of
    /// table name to `pyarrow.Table`, handed over through the Arrow C data interface without
    /// files: those `only` names (`["samples", "stack_nodes", "frames"]`), or all. Every row's
    /// `profile_id` is `profile_id` (default: the input's name up to its first dot).
    #[pyo3(signature = (profile_id = None, only = None))]
    fn tables<'py>(
        &self,
        py: Python<'py>,
        profile_id: Option<&str>,
        only: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let only: Option<Vec<&str>> = only.as_ref().map(|o| o.iter().map(String::as_str).collect());
        let made = py
            .detach(|| embed::tables(&self.inner, profile_id, only.as_deref()))
            .map_err(|e| exception(py, e))?;
        let reader = py.import("pyarrow")?.getattr("RecordBatchReader")?;
        let out = PyDict::new(py);
        for table in made {
            let batches: Vec<RecordBatch> = table.batches;
            let stream = RecordBatchIterator::new(batches.into_iter().map(Ok), table.schema);
            let mut stream = Box::new(FFI_ArrowArrayStream::new(Box::new(stream)));
            let address = (&mut *stream as *mut FFI_ArrowArrayStream as *mut c_void) as usize;
            // pyarrow moves the stream out of `stream` (leaving it released) and owns it.
            let imported = reader.call_method1("_import_from_c", (address,))?;
            out.set_item(table.name, imported.call_method0("read_all")?)?;
        }
        Ok(out)
    }

    /// Writes it to `output` in the format `to` or the one the name asks for, with the
    /// options of `cfghub convert` as keywords (`compression="zstd"`, `pretty=True`, ...).
    #[pyo3(signature = (output, *, quiet = false, **kwargs))]
    fn write(
        &self,
        py: Python<'_>,
        output: &Bound<'_, PyAny>,
        quiet: bool,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let mut args = vec![text(output)?];
        args.extend(options(kwargs)?);
        py.detach(|| embed::write(&self.inner, &args, quiet)).map_err(|e| exception(py, e))
    }

    fn __repr__(&self) -> String {
        format!(
            "<cfghub.Profile {:?}: {}, {} process(es), events {:?}>",
            self.inner.name,
            self.inner.loaded.format.name,
            self.inner.loaded.profile.processes.len(),
            self.events()
        )
    }
}

/// Reads a profile in any format cfghub reads, from a path or from bytes (then `name`, whose
/// suffix may tell the format, names it in messages). Keywords are the options of `cfghub
/// convert`'s reading: `from_` (the format), `symbols` (binaries to name addresses from),
/// `labels`, `label_from_path`, `address_step`, ...
#[pyfunction]
#[pyo3(signature = (source, *, name = None, quiet = false, **kwargs))]
fn read(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    name: Option<String>,
    quiet: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Profile> {
    let content = bytes_of(source)?;
    let input = match (&content, name) {
        (_, Some(name)) => name,
        (Some(_), None) => "<bytes>".to_string(),
        (None, None) => text(source)?,
    };
    let mut args = vec![input];
    args.extend(options(kwargs)?);
    let inner = py
        .detach(|| {
            let content = content.map(|bytes| {
                let size = bytes.len() as u64;
                let reader: Box<dyn std::io::Read + Send> = Box::new(std::io::Cursor::new(bytes));
                (reader, size)
            });
            embed::read(&args, content, quiet)
        })
        .map_err(|e| exception(py, e))?;
    Ok(Profile { inner })
}

/// Runs a cfghub command line (`["info", "app.pb.gz", "--json"]`, without `cfghub`) as the
/// command runs it, output and all; returns its exit status (1: `validate` found violations).
#[pyfunction]
fn run(py: Python<'_>, args: Vec<String>) -> PyResult<i32> {
    py.detach(|| embed::run(&args)).map_err(|e| exception(py, e))
}

/// Converts `input` to `output` as `cfghub convert` does; keywords are its options (`from_`,
/// `to`, `symbols`, `labels`, `compression`, ...).
#[pyfunction]
#[pyo3(signature = (input, output, *, quiet = false, **kwargs))]
fn convert(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    output: &Bound<'_, PyAny>,
    quiet: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let mut args = vec!["convert".to_string(), text(input)?, "-o".to_string(), text(output)?];
    args.extend(options(kwargs)?);
    if quiet {
        args.push("--quiet".into());
    }
    run(py, args).map(drop)
}

/// Sums `inputs` into `output` exactly, as `cfghub merge` does (or attributes samples to a
/// DCFG's blocks); keywords are its options (`label_from_path`, `split_by`, `symbols`, ...).
#[pyfunction]
#[pyo3(signature = (inputs, output, *, quiet = false, **kwargs))]
fn merge(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    output: &Bound<'_, PyAny>,
    quiet: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let mut args = vec!["merge".to_string()];
    for input in inputs.try_iter()? {
        args.push(text(&input?)?);
    }
    args.extend(["-o".to_string(), text(output)?]);
    args.extend(options(kwargs)?);
    if quiet {
        args.push("--quiet".into());
    }
    run(py, args).map(drop)
}

/// The formats cfghub knows: a dict per format with its `name`, `description` and whether it
/// can be `read` and `written`.
#[pyfunction]
fn formats(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    cfghub::registry::formats()
        .iter()
        .map(|f| {
            let d = PyDict::new(py);
            d.set_item("name", f.name)?;
            d.set_item("description", f.description)?;
            d.set_item("read", f.can_read())?;
            d.set_item("written", f.can_write())?;
            Ok(d)
        })
        .collect()
}

/// The native part of the `cfghub` package.
#[pymodule]
fn _cfghub(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("FileError", py.get_type::<FileError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add_class::<Profile>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(formats, m)?)?;
    Ok(())
}
