// The token's snapshots: what each keeps, its size, when it was taken; a new session from one, or its deletion.
import type { SnapshotInfo } from "@crucible/sdk";
import { crucible, describe } from "../../api/client";
import { announce, el } from "../../ui/dom";
import { ago, bytes, duration, when } from "../../ui/format";
import { Table } from "../../ui/table";

export class SnapshotsPanel {
  private readonly table: Table<SnapshotInfo>;

  constructor(
    private readonly opened: (sessionId: string) => void,
    private readonly say: (text: string, bad?: boolean) => void,
  ) {
    this.table = new Table<SnapshotInfo>({
      id: "snapshots",
      filter: "filter snapshots",
      key: (s) => s.name,
      sort: { key: "created", descending: true },
      empty: "No snapshot: a session's Snapshot button takes one.",
      columns: [
        { key: "name", label: "snapshot", value: (s) => s.name },
        { key: "language", label: "language", value: (s) => s.language },
        { key: "keeps", label: "keeps", value: (s) => s.keeps },
        { key: "size", label: "size", numeric: true, value: (s) => s.bytes, show: (s) => bytes(s.bytes) },
        {
          key: "created",
          label: "taken",
          value: (s) => s.created_at,
          show: (s) => el("span", { title: when(s.created_at) }, ago(s.created_at)),
        },
        { key: "took", label: "took", numeric: true, value: (s) => s.took_ms, show: (s) => duration(s.took_ms) },
        {
          key: "actions",
          label: "",
          value: () => "",
          show: (s) => [
            el("button", { onclick: () => void this.start(s) }, "new session"),
            " ",
            el("button", { class: "danger", onclick: () => void this.remove(s) }, "delete"),
          ],
        },
      ],
    });
  }

  get element(): HTMLElement {
    return this.table.element;
  }

  async list(): Promise<void> {
    try {
      const snapshots = await crucible().snapshots();
      this.table.set(snapshots);
      announce("snapshots", snapshots.length);
    } catch (e) {
      this.say(describe(e), true);
    }
  }

  private async start(s: SnapshotInfo): Promise<void> {
    try {
      const session = await crucible().createSession({ snapshot: s.name });
      this.say(
        `made ${session.id} from ${s.name}${session.info?.restored ? ` (${session.info.restored} restored)` : ""}`,
      );
      this.opened(session.id);
    } catch (e) {
      this.say(describe(e), true);
    }
  }

  private async remove(s: SnapshotInfo): Promise<void> {
    try {
      await crucible().deleteSnapshot(s.name);
    } catch (e) {
      this.say(describe(e), true);
    }
    await this.list();
  }
}
