// The code editor: CodeMirror 6 with highlighting per language, Mod-Enter to run, its style elements under the
// page's nonce.

import { cpp } from "@codemirror/lang-cpp";
import { java } from "@codemirror/lang-java";
import { javascript } from "@codemirror/lang-javascript";
import { python } from "@codemirror/lang-python";
import { Compartment, type Extension } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { basicSetup, EditorView } from "codemirror";
import { nonce } from "./nonce";

/** A first program for each language, shown until the user types one. */
const SAMPLES: Record<string, string> = {
  python: 'print("hello from the sandbox")\n',
  javascript: 'console.log("hello from the sandbox");\n',
  bash: 'echo "hello from the sandbox"\n',
  c: '#include <stdio.h>\nint main(void) { puts("hello from the sandbox"); return 0; }\n',
  cpp: '#include <iostream>\nint main() { std::cout << "hello from the sandbox" << std::endl; }\n',
  java:
    "public class Main {\n    public static void main(String[] args) {\n" +
    '        System.out.println("hello from the sandbox");\n    }\n}\n',
};
const MODES: Record<string, () => Extension> = { python, javascript, c: cpp, cpp, java };

export class CodeEditor {
  private readonly view: EditorView;
  private readonly mode = new Compartment();

  constructor(parent: HTMLElement, language: string, run: () => void) {
    this.view = new EditorView({
      doc: SAMPLES[language] ?? "",
      parent,
      extensions: [
        keymap.of([
          {
            key: "Mod-Enter",
            run: () => {
              run();
              return true;
            },
          },
        ]),
        basicSetup,
        this.mode.of(MODES[language]?.() ?? []),
        EditorView.cspNonce.of(nonce),
      ],
    });
  }

  get code(): string {
    return this.view.state.doc.toString();
  }

  /** Puts `code` in the editor, highlighted as `language`. */
  setCode(code: string, language: string): void {
    this.view.dispatch({
      changes: { from: 0, to: this.view.state.doc.length, insert: code },
      effects: this.mode.reconfigure(MODES[language]?.() ?? []),
    });
  }

  /** Highlights `language`; the code becomes its sample unless the user wrote some of their own. */
  setLanguage(language: string): void {
    const untouched = !this.code.trim() || Object.values(SAMPLES).includes(this.code);
    this.view.dispatch({
      changes: untouched ? { from: 0, to: this.view.state.doc.length, insert: SAMPLES[language] ?? "" } : undefined,
      effects: this.mode.reconfigure(MODES[language]?.() ?? []),
    });
  }

  focus(): void {
    this.view.focus();
  }
}
