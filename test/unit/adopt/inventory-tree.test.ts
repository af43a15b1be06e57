// group_vars and host_vars as adopt reads them: vault values never decrypted (a host that needs one
// to connect is left out, naming the file and the variable), a jump host set by a template, and
// ProxyJump lists split into jump hosts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { jumpsOf } from "../../../src/adopt/host-keys.js";
import {
  planAdoption,
  readAdjacentVars,
  readInventory,
} from "../../../src/adopt/inventory/index.js";
import { InventoryErrors } from "../../../src/errors.js";

const VAULT = "!vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6231336539\n";
const files = (entries: Record<string, string>) =>
  new Map(
    Object.entries(entries).map(([name, text]) => [name, [{ file: `gv/${name}.yml`, text }]]),
  );

test("a vault-encrypted connection variable leaves its host out, naming file, line and variable; another is only said", () => {
  const inventory = readInventory("hosts.ini", "[web]\nweb-01\nweb-02\n[db]\ndb-01\n");
  const adjacent = readAdjacentVars(
    {
      groupVars: files({
        all: `ansible_become_password: ${VAULT}`,
        db: `ansible_user: ${VAULT}`,
      }),
      hostVars: new Map(),
    },
    "hosts.ini",
  );
  const plan = planAdoption("hosts.ini", inventory, adjacent);
  assert.deepEqual(
    plan.hosts.map((h) => h.name),
    ["web-01", "web-02"],
  );
  assert.deepEqual(
    [...plan.unreadable],
    [
      [
        "db-01",
        "ansible_user (gv/db.yml:1) is vault-encrypted: Quartermaster never decrypts a value, and this one is needed to connect",
      ],
    ],
  );
  assert.deepEqual([...plan.vaulted], [["ansible_become_password (gv/all.yml)", 3]]);
});

test("a file vault-encrypted as a whole is named and none of its variables read; a vars file that is no mapping is refused by file and line", () => {
  const adjacent = readAdjacentVars(
    {
      groupVars: files({ all: "$ANSIBLE_VAULT;1.1;AES256\n6231\n", web: "ansible_user: deploy\n" }),
      hostVars: new Map(),
    },
    "hosts.ini",
  );
  assert.deepEqual(adjacent.vaultFiles, ["gv/all.yml"]);
  assert.equal(adjacent.groups.get("web")!.get("ansible_user")!.value, "deploy");
  assert.throws(
    () =>
      readAdjacentVars(
        { groupVars: files({ web: "\n- ansible_user\n" }), hostVars: new Map() },
        "hosts.ini",
      ),
    (e: unknown) =>
      e instanceof InventoryErrors && /^gv\/web\.yml:2: vars must be a mapping/.test(e.message),
  );
});

test("a jump host set by a template leaves its host out, naming the variable; a templated user is left out and counted", () => {
  const inventory = readInventory("hosts.ini", "[web]\nweb-01\n");
  const adjacent = readAdjacentVars(
    {
      groupVars: files({
        all: "ansible_ssh_common_args: '-o ProxyJump={{ bastion }}'\nansible_user: '{{ user }}'\n",
      }),
      hostVars: new Map(),
    },
    "hosts.ini",
  );
  const plan = planAdoption("hosts.ini", inventory, adjacent);
  assert.deepEqual(
    [...plan.unreadable],
    [
      [
        "web-01",
        "its jump host is set by ansible_ssh_common_args (gv/all.yml:1), a template ({{ … }}) Quartermaster does not evaluate",
      ],
    ],
  );
  assert.deepEqual([...plan.templated], [["ansible_user", 1]]);
});

test("ansible_become gives root through sudo, as Ansible layers it; another become method is said, naming host and variable", () => {
  const inventory = readInventory(
    "hosts.ini",
    "[web]\nweb-01\nweb-02 ansible_become=no\n[db]\ndb-01\n[app]\napp-01 ansible_become=True\n",
  );
  const adjacent = readAdjacentVars(
    {
      groupVars: files({
        web: "ansible_become: yes\n",
        db: "ansible_become: true\nansible_become_method: su\n",
        app: "ansible_become_method: sudo\n",
      }),
      hostVars: new Map(),
    },
    "hosts.ini",
  );
  const plan = planAdoption("hosts.ini", inventory, adjacent);
  assert.deepEqual(
    plan.hosts.map((h) => [h.name, h.ssh.become]),
    [
      ["web-01", "sudo"],
      // The host's own variable wins over its group_vars.
      ["web-02", undefined],
      ["db-01", undefined],
      ["app-01", "sudo"],
    ],
  );
  assert.deepEqual(
    [...plan.becomeUnsupported],
    [
      [
        "db-01",
        'ansible_become_method "su" (gv/db.yml:2) is not supported: Quartermaster becomes root through sudo only; adopted without root',
      ],
    ],
  );
  assert.deepEqual([...plan.ignored], []);
});

test("ProxyJump lists split into jump hosts as ssh reads them", () => {
  assert.deepEqual(jumpsOf("none"), []);
  assert.deepEqual(jumpsOf("ops@bastion:2222,ssh://[fd00::1]:22,inner"), [
    { spec: "ops@bastion:2222", host: "bastion", user: "ops", port: 2222 },
    { spec: "ssh://[fd00::1]:22", host: "fd00::1", port: 22 },
    { spec: "inner", host: "inner" },
  ]);
});
