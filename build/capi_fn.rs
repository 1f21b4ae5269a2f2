//! Expands the C function declarations of the `src/capi/*.rs.in` templates (`@@ fn`) into
//! `extern "C"` functions: the C parameter list, the argument documentation, the checks of
//! every pointer, the handle lookup and the panic guard are generated from one declaration,
//! so each C function states only what it does.
//!
//! ```text
//! @@ fn kstate_kv_put
//! /// Summary and description (doc lines before the parameters).
//! @ store: kv - a timestamped store
//! @ key: span - the key
//! @ timestamp: i64 - the record timestamp
//! /// # Errors (doc lines after the parameters, after the generated `# Arguments`)
//! {
//!     store.put(key, b"", timestamp)
//! }
//! ```
//!
//! A parameter is `@ name: type - doc` (the doc may be left out: no `# Arguments` line).
//! The types and what the body sees:
//! * `kv`, `window`, `session`, `versioned`: a store handle (`*mut kstate_<kind>_t`), looked up (an
//!   invalid or closed handle is the error) and bound as `Arc` of the kind's store;
//! * `handle <C type>`: a handle passed on unlooked-up (`*mut <C type>`), for functions
//!   that release it or hand its number on;
//! * `span` / `opt_span`: `name: *const u8, name_len: usize`, checked and bound as `&[u8]`
//!   / `Option<&[u8]>` (NULL: `None`);
//! * `array <T>`: `name: *const T, name_len: usize`, bound as `&[T]`;
//! * `utf8`: `name: *const c_char`, bound as `&str` (NULL or not UTF-8: the error);
//! * `isolation`: a `kstate_isolation_t`, bound as [`Isolation`];
//! * `out <T>`: an out-parameter `*mut T`, set to `T`'s "nothing" value on entry (before
//!   anything can fail) and bound as `&mut T`;
//! * any other type: passed as is.
//!
//! Out-parameters are checked first, then the store handle, then the rest in order. The
//! body is the block from `{` to the first line that is exactly `}`; it returns
//! `Result<()>`. The function is `unsafe` when a parameter is read through a pointer; its
//! safety contract is the header's pointer rules (see `cbindgen.toml`), so only a function
//! with more to require writes a `# Safety` section.

/// One parameter of a declaration.
struct Param {
    name: String,
    kind: Kind,
    doc: Option<String>,
}

/// How a parameter crosses the boundary.
enum Kind {
    /// A store handle looked up as the given Rust store type.
    Store {
        c: String,
        rust: &'static str,
    },
    /// A handle passed on as is.
    Handle(String),
    Span,
    OptSpan,
    Array(String),
    Utf8,
    Isolation,
    Out(String),
    Plain(String),
}

impl Kind {
    fn parse(text: &str) -> Result<Kind, String> {
        let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
        let rest = rest.trim().to_string();
        let needs = |k: fn(String) -> Kind| {
            if rest.is_empty() {
                Err(format!("`{word}` needs a type"))
            } else {
                Ok(k(rest.clone()))
            }
        };
        Ok(match word {
            "kv" => Kind::Store {
                c: "kstate_kv_t".into(),
                rust: "crate::KvStore",
            },
            "window" => Kind::Store {
                c: "kstate_window_t".into(),
                rust: "crate::WindowStore",
            },
            "session" => Kind::Store {
                c: "kstate_session_t".into(),
                rust: "crate::SessionStore",
            },
            "versioned" => Kind::Store {
                c: "kstate_versioned_t".into(),
                rust: "crate::VersionedStore",
            },
            "handle" => needs(Kind::Handle)?,
            "span" => Kind::Span,
            "opt_span" => Kind::OptSpan,
            "array" => needs(Kind::Array)?,
            "utf8" => Kind::Utf8,
            "isolation" => Kind::Isolation,
            "out" => needs(Kind::Out)?,
            _ => Kind::Plain(text.to_string()),
        })
    }

    /// Whether the function reads or writes through this parameter.
    fn dereferenced(&self) -> bool {
        match self {
            Kind::Span | Kind::OptSpan | Kind::Array(_) | Kind::Utf8 | Kind::Out(_) => true,
            Kind::Plain(t) => t.starts_with('*'),
            _ => false,
        }
    }
}

impl Param {
    /// The C parameters (name, type) this parameter becomes.
    fn c_params(&self) -> Vec<(String, String)> {
        let n = &self.name;
        match &self.kind {
            Kind::Store { c, .. } | Kind::Handle(c) => vec![(n.clone(), format!("*mut {c}"))],
            Kind::Span | Kind::OptSpan => vec![
                (n.clone(), "*const u8".into()),
                (format!("{n}_len"), "usize".into()),
            ],
            Kind::Array(t) => {
                vec![
                    (n.clone(), format!("*const {t}")),
                    (format!("{n}_len"), "usize".into()),
                ]
            }
            Kind::Utf8 => vec![(n.clone(), "*const std::ffi::c_char".into())],
            Kind::Isolation => vec![(n.clone(), "crate::capi::kstate_isolation_t".into())],
            Kind::Out(t) => vec![(n.clone(), format!("*mut {t}"))],
            Kind::Plain(t) => vec![(n.clone(), t.clone())],
        }
    }

    /// The statement binding the checked value inside the guarded body, if any.
    fn binding(&self) -> Option<String> {
        let n = &self.name;
        let b = "crate::capi::bytes";
        Some(match &self.kind {
            Kind::Store { rust, .. } => format!(
                "let {n} = crate::handle::HANDLES.get::<{rust}>(crate::capi::number({n}))?;"
            ),
            Kind::Handle(_) | Kind::Plain(_) => return None,
            Kind::Span => format!("let {n} = unsafe {{ {b}::span({n}, {n}_len, \"{n}\")? }};"),
            Kind::OptSpan => {
                format!("let {n} = unsafe {{ {b}::opt_span({n}, {n}_len, \"{n}\")? }};")
            }
            Kind::Array(_) => {
                format!("let {n} = unsafe {{ {b}::array({n}, {n}_len, \"{n}\")? }};")
            }
            Kind::Utf8 => format!("let {n} = unsafe {{ {b}::utf8({n}, \"{n}\")? }};"),
            Kind::Isolation => format!("let {n} = crate::capi::isolation({n})?;"),
            Kind::Out(_) => format!("let {n} = unsafe {{ {b}::out({n}, \"{n}\")? }};"),
        })
    }

    /// The `# Arguments` line.
    fn doc_line(&self) -> Option<String> {
        let doc = self.doc.as_ref()?;
        let names = match self.kind {
            Kind::Span | Kind::OptSpan | Kind::Array(_) => {
                format!("`{0}`, `{0}_len`", self.name)
            }
            _ => format!("`{}`", self.name),
        };
        let end = if doc.ends_with('.') { "" } else { "." };
        Some(format!("/// * {names} - {doc}{end}"))
    }
}

/// Expands every `@@ fn` block of `text`; other lines are copied.
pub fn expand(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(name) = line.strip_prefix("@@ fn ") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let mut block = Vec::new();
        loop {
            match lines.next() {
                Some((_, "}")) => break,
                Some((_, l)) => block.push(l),
                None => return Err(format!("{}: `@@ fn` without a closing `}}`", n + 1)),
            }
        }
        let f = function(name.trim(), &block).map_err(|e| format!("{}: {e}", n + 1))?;
        out.push_str(&f);
    }
    Ok(out)
}

/// One `extern "C"` function from its declaration.
fn function(name: &str, block: &[&str]) -> Result<String, String> {
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut params = Vec::new();
    let mut body = Vec::new();
    let mut in_body = false;
    for l in block {
        if in_body {
            body.push(*l);
        } else if *l == "{" {
            in_body = true;
        } else if let Some(p) = l.strip_prefix("@ ") {
            let (decl, doc) = match p.split_once(" - ") {
                Some((d, doc)) => (d, Some(doc.trim().to_string())),
                None => (p, None),
            };
            let (pname, ty) = decl
                .split_once(':')
                .ok_or_else(|| format!("`{l}`: no type"))?;
            params.push(Param {
                name: pname.trim().to_string(),
                kind: Kind::parse(ty.trim())?,
                doc,
            });
        } else if l.trim_start().starts_with("///") || l.trim_start().starts_with("#[") {
            if params.is_empty() {
                &mut before
            } else {
                &mut after
            }
            .push(*l);
        } else {
            return Err(format!("`{l}`: expected a doc line, `@ param`, or `{{`"));
        }
    }
    if !in_body {
        return Err(format!("{name}: no body"));
    }
    let mut f = String::new();
    for l in &before {
        f.push_str(&format!("{l}\n"));
    }
    let args: Vec<String> = params.iter().filter_map(Param::doc_line).collect();
    if !args.is_empty() {
        f.push_str("///\n/// # Arguments\n");
        for a in &args {
            f.push_str(&format!("{a}\n"));
        }
    }
    if !after.is_empty() {
        f.push_str("///\n");
    }
    for l in &after {
        f.push_str(&format!("{l}\n"));
    }
    let c_params: Vec<(String, String)> = params.iter().flat_map(Param::c_params).collect();
    let unsafe_fn = params.iter().any(|p| p.kind.dereferenced());
    if unsafe_fn && !after.iter().chain(&before).any(|l| l.contains("# Safety")) {
        f.push_str("#[allow(clippy::missing_safety_doc)]\n");
    }
    if c_params.len() > 7 {
        f.push_str("#[allow(clippy::too_many_arguments)]\n");
    }
    f.push_str("#[must_use]\n#[no_mangle]\n");
    let list: Vec<String> = c_params.iter().map(|(n, t)| format!("{n}: {t}")).collect();
    f.push_str(&format!(
        "pub {}extern \"C\" fn {name}({}) -> *mut crate::capi::kstate_error_t {{\n",
        if unsafe_fn { "unsafe " } else { "" },
        list.join(", ")
    ));
    let outs: Vec<&Param> = params
        .iter()
        .filter(|p| matches!(p.kind, Kind::Out(_)))
        .collect();
    if !outs.is_empty() {
        f.push_str("    // SAFETY: each out-parameter is NULL or writable (the header's pointer rules).\n    unsafe {\n");
        for p in &outs {
            f.push_str(&format!(
                "        crate::capi::bytes::init({0}, crate::capi::bytes::Nothing::NOTHING);\n",
                p.name
            ));
        }
        f.push_str("    }\n");
    }
    f.push_str("    crate::capi::error::ffi_call(|| {\n");
    let order = outs
        .iter()
        .copied()
        .chain(
            params
                .iter()
                .filter(|p| matches!(p.kind, Kind::Store { .. })),
        )
        .chain(
            params
                .iter()
                .filter(|p| !matches!(p.kind, Kind::Out(_) | Kind::Store { .. })),
        );
    for p in order {
        if let Some(b) = p.binding() {
            if p.kind.dereferenced() {
                f.push_str("        // SAFETY: valid as the header's pointer rules require (caller's guarantee); out-parameters initialised above; used during this call only.\n");
            }
            f.push_str(&format!("        {b}\n"));
        }
    }
    for l in &body {
        f.push_str(&format!("    {l}\n"));
    }
    f.push_str("    })\n}\n");
    Ok(f)
}
