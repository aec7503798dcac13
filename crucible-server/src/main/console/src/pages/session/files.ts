// A session's files: the workspace (relative paths) or any directory of its file system (an absolute path typed, or
// up from the workspace), as a table with sizes and times; uploads into the directory shown, downloads of any file.
import type { FileEntry, Session } from "@crucible/sdk";
import { describe } from "../../api/client";
import { announce, el } from "../../ui/dom";
import { ago, bytes, when } from "../../ui/format";
import { Table } from "../../ui/table";

export class FilesPanel {
  private readonly dir = el("input", { id: "files-dir", placeholder: "/workspace", "aria-label": "directory" });
  private readonly upload = el("input", { id: "upload", type: "file", "aria-label": "upload" });
  private readonly table = new Table<FileEntry>({
    id: "files",
    filter: "filter files",
    key: (f) => f.path,
    sort: { key: "name", descending: false },
    empty: "An empty directory.",
    columns: [
      {
        key: "name",
        label: "name",
        value: (f) => `${f.type === "directory" ? 0 : 1}${f.path}`,
        text: (f) => f.path,
        show: (f) => this.name(f),
      }, // directories first
      {
        key: "size",
        label: "size",
        numeric: true,
        value: (f) => (f.type === "file" ? f.size : null),
        show: (f) => (f.type === "file" ? bytes(f.size) : ""),
      },
      {
        key: "modified",
        label: "modified",
        value: (f) => f.modified_at,
        show: (f) => el("span", { title: when(f.modified_at) }, ago(f.modified_at)),
      },
      {
        key: "get",
        label: "",
        value: () => "",
        show: (f) =>
          f.type === "file"
            ? el("button", { class: "icon", title: `download ${f.path}`, onclick: () => void this.download(f) }, "↓")
            : "",
      },
    ],
  });
  readonly element = el(
    "div",
    { id: "tab-files", class: "tab" },
    el(
      "form",
      {
        id: "files-go",
        class: "path",
        onsubmit: (e: Event) => {
          e.preventDefault();
          void this.list();
        },
      },
      this.dir,
      el("button", { id: "files-up", type: "button", title: "the directory above", onclick: () => this.up() }, "↑"),
      el("button", { id: "files-refresh", type: "submit", title: "refresh" }, "↻"),
    ),
    el("label", { class: "upload" }, "Upload ", this.upload),
    this.table.element,
  );

  constructor(
    private readonly session: Session,
    private readonly say: (text: string, bad?: boolean) => void,
  ) {
    this.upload.addEventListener("change", () => void this.put());
  }

  /** Lists the directory typed (the workspace when empty). */
  async list(): Promise<void> {
    const dir = this.dir.value.trim();
    try {
      this.table.set(await this.session.listFiles(dir));
    } catch (e) {
      this.table.set([]);
      this.say(describe(e), true);
    }
    announce("filesDir", dir);
  }

  private name(f: FileEntry): HTMLElement {
    if (f.type !== "directory") {
      return el("span", { class: "name" }, f.type === "symlink" ? `${f.path} →` : f.path);
    }
    return el(
      "button",
      {
        type: "button",
        class: "name dir",
        onclick: () => {
          this.dir.value = this.resolve(f.path);
          void this.list();
        },
      },
      `${f.path}/`,
    );
  }

  private resolve(path: string): string {
    const dir = this.dir.value.trim().replace(/\/+$/, "");
    return path.startsWith("/") || !dir ? path : `${dir}/${path}`;
  }

  private up(): void {
    const dir = this.dir.value.trim().replace(/\/+$/, "");
    this.dir.value = dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) || "/" : "";
    void this.list();
  }

  private async put(): Promise<void> {
    const file = this.upload.files?.[0];
    if (!file) return;
    const path = this.resolve(file.name);
    try {
      await this.session.writeFile(path, new Uint8Array(await file.arrayBuffer()));
      this.say(`uploaded ${path} (${bytes(file.size)})`);
    } catch (e) {
      this.say(`upload refused: ${describe(e)}`, true);
    }
    this.upload.value = "";
    await this.list();
  }

  private async download(f: FileEntry): Promise<void> {
    try {
      const data = await this.session.readFile(this.resolve(f.path));
      const link = el("a", {
        href: URL.createObjectURL(new Blob([data as BlobPart])),
        download: f.path.split("/").pop(),
      });
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    } catch (e) {
      this.say(describe(e), true);
    }
  }
}
