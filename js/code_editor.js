// labkit's code editor: CodeMirror 6 with Python behind an anywidget model.
//
// The model (labkit/widgets/code_editor.py) syncs three traits: `value` (the code, written back
// on every edit), `error_line` (1-based; 0: none) and `error_message` (the line's tooltip).
// Ctrl+Enter and Shift+Enter send {event: "run", value}: the message carries the code, since
// ipywidgets holds back value updates while the kernel is busy and a custom message overtakes
// them. scripts/build_editor.sh bundles this file with its pinned packages into
// labkit/widgets/static/code_editor.js.

import { EditorView, minimalSetup } from "codemirror";
import {
  Decoration,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import { EditorState, StateEffect, StateField } from "@codemirror/state";
import { indentWithTab } from "@codemirror/commands";
import { bracketMatching, indentOnInput, indentUnit } from "@codemirror/language";
import { python } from "@codemirror/lang-python";

const setError = StateEffect.define();

// The error line as a line decoration; kept on its line while the user edits around it.
const errorField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (!e.is(setError)) continue;
      const { line, message } = e.value;
      if (line < 1 || line > tr.state.doc.lines) {
        deco = Decoration.none;
      } else {
        const from = tr.state.doc.line(line).from;
        const mark = Decoration.line({
          class: "cm-lk-error-line",
          attributes: { title: message, "data-error-line": String(line) },
        });
        deco = Decoration.set([mark.range(from)]);
      }
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

const theme = EditorView.theme({
  "&": {
    fontSize: "13px",
    border: "1px solid #c8c8c8",
    borderRadius: "3px",
    backgroundColor: "#fff",
  },
  "&.cm-focused": { outline: "2px solid #90caf9" },
  ".cm-scroller": {
    fontFamily: "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace",
    overflow: "auto",
  },
  ".cm-gutters": { backgroundColor: "#f5f5f5", color: "#6e6e6e", borderRight: "1px solid #ddd" },
  ".cm-lk-error-line": { backgroundColor: "#fde2e4", boxShadow: "inset 3px 0 0 #c62828" },
});

function runKey(view, model) {
  const value = view.state.doc.toString();
  model.set("value", value);
  model.save_changes();
  model.send({ event: "run", value });
  return true; // handled: CodeMirror inserts no newline
}

function render({ model, el }) {
  let fromModel = false; // a doc change that came from Python is not echoed back
  const run = (view) => runKey(view, model);
  const view = new EditorView({
    parent: el,
    state: EditorState.create({
      doc: model.get("value"),
      extensions: [
        keymap.of([
          { key: "Ctrl-Enter", run },
          { key: "Shift-Enter", run },
          { key: "Mod-Enter", run },
          indentWithTab,
        ]),
        minimalSetup,
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightActiveLine(),
        bracketMatching(),
        indentOnInput(),
        indentUnit.of("    "),
        python(),
        errorField,
        theme,
        EditorView.theme({ ".cm-content, .cm-gutter": { minHeight: model.get("height") } }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !fromModel) {
            model.set("value", u.state.doc.toString());
            model.save_changes();
          }
        }),
      ],
    }),
  });
  el.classList.add("lk-code-editor");
  // JupyterLab's notebook shortcuts (Shift+Enter runs the cell, "a"/"b"/"d" in command mode)
  // must not fire while the user types here.
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  el.addEventListener("keydown", (e) => e.stopPropagation());

  const showError = () =>
    view.dispatch({
      effects: setError.of({ line: model.get("error_line"), message: model.get("error_message") }),
    });
  const onValue = () => {
    const value = model.get("value");
    if (value === view.state.doc.toString()) return;
    fromModel = true;
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: value } });
    fromModel = false;
  };
  model.on("change:value", onValue);
  model.on("change:error_line", showError);
  model.on("change:error_message", showError);
  showError();
  return () => {
    model.off("change:value", onValue);
    model.off("change:error_line", showError);
    model.off("change:error_message", showError);
    view.destroy();
  };
}

export default { render };
