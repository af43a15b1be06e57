import assert from "node:assert/strict";
import { test } from "node:test";
import {
  detectFormat,
  planAdoption,
  readInventory,
  type Inventory,
} from "../../../src/adopt/inventory/index.js";
import { expandHostPattern } from "../../../src/adopt/inventory/host-pattern.js";
import { InventoryErrors } from "../../../src/errors.js";

const INI = `# production
bastion.example.net

[web]
web-0[1:3] ansible_user=deploy
web-04 ansible_host=10.0.0.4 ansible_port=2222 http_port=80

[db]
db-01 ansible_ssh_common_args='-o ProxyJump=bastion.example.net -o Compression=yes'

[db:vars]
ansible_ssh_private_key_file=~/.ssh/db

[prod:children]
web
db

[all:vars]
ansible_user=audit
`;

const YAML = `all:
  vars:
    ansible_user: audit
  hosts:
    bastion.example.net:
  children:
    prod:
      children:
        web:
          hosts:
            web-01: { ansible_user: deploy }
            web-04: { ansible_host: 10.0.0.4, ansible_port: 2222, http_port: 80 }
        db:
          vars: { ansible_ssh_private_key_file: ~/.ssh/db }
          hosts:
            db-01: { ansible_ssh_common_args: "-J bastion.example.net" }
`;

const JSON_LIST = JSON.stringify(
  {
    _meta: {
      hostvars: {
        "web-01": { ansible_user: "deploy" },
        "db-01": { ansible_ssh_common_args: "-o ProxyJump=bastion.example.net" },
      },
    },
    all: { children: ["ungrouped", "prod"] },
    prod: { children: ["web", "db"] },
    web: { hosts: ["web-01"] },
    db: { hosts: ["db-01"], vars: { ansible_ssh_private_key_file: "~/.ssh/db" } },
    ungrouped: { hosts: ["bastion.example.net"] },
  },
  null,
  2,
);

const summary = (inventory: Inventory) => {
  const plan = planAdoption("inv", inventory);
  return {
    hosts: Object.fromEntries(
      plan.hosts.map((h) => [h.name, { host: h.host, ssh: h.ssh, groups: h.groups }]),
    ),
    groups: Object.fromEntries(plan.groups),
    ignored: Object.fromEntries(plan.ignored),
  };
};

test("each format is told from its content", () => {
  assert.equal(detectFormat(INI), "ansible-ini");
  assert.equal(detectFormat(YAML), "ansible-yaml");
  assert.equal(detectFormat(JSON_LIST), "ansible-json");
  assert.equal(detectFormat("Host web-01\n  HostName 10.0.0.1\nHost *\n  User x\n"), "ssh-config");
  assert.equal(detectFormat("web-01\n# a comment\ndb-01\n"), "host-list");
  assert.equal(detectFormat("web-01 ansible_host=10.0.0.1\n"), "ansible-ini");
});

test("INI: groups, ranges, children, group and fleet vars, ProxyJump, ignored variables named", () => {
  const s = summary(readInventory("inv", INI));
  assert.deepEqual(s.hosts["web-02"], {
    host: undefined,
    ssh: { user: "deploy" },
    groups: ["web"],
  });
  assert.deepEqual(s.hosts["web-04"], {
    host: "10.0.0.4",
    ssh: { user: "audit", port: 2222 },
    groups: ["web"],
  });
  assert.deepEqual(s.hosts["db-01"], {
    host: undefined,
    ssh: { user: "audit", proxy_jump: "bastion.example.net", identity_file: "~/.ssh/db" },
    groups: ["db"],
  });
  assert.deepEqual(s.hosts["bastion.example.net"]!.groups, []);
  assert.deepEqual(s.groups, { web: ["prod"], db: ["prod"], prod: [] });
  assert.deepEqual(s.ignored, { http_port: 1, "ansible_ssh_common_args (beyond ProxyJump)": 1 });
});

test("YAML and ansible-inventory --list JSON read as the INI does", () => {
  const yaml = summary(readInventory("inv", YAML));
  assert.deepEqual(yaml.hosts["web-04"], {
    host: "10.0.0.4",
    ssh: { user: "audit", port: 2222 },
    groups: ["web"],
  });
  assert.deepEqual(yaml.hosts["db-01"]!.ssh, {
    user: "audit",
    identity_file: "~/.ssh/db",
    proxy_jump: "bastion.example.net",
  });
  assert.deepEqual(yaml.groups, { prod: [], web: ["prod"], db: ["prod"] });
  const json = summary(readInventory("inv", JSON_LIST));
  assert.deepEqual(json.hosts["web-01"], {
    host: undefined,
    ssh: { user: "deploy" },
    groups: ["web"],
  });
  assert.deepEqual(json.hosts["db-01"]!.ssh, {
    identity_file: "~/.ssh/db",
    proxy_jump: "bastion.example.net",
  });
  assert.deepEqual(json.groups, { prod: [], web: ["prod"], db: ["prod"] });
});

test("ssh_config: Host names without wildcards; host list: one a line", () => {
  const ssh = readInventory(
    "cfg",
    "Host web-01 web-02 !bad\n  HostName x\nHost *.corp db-?\nhost=db-01\n",
  );
  assert.deepEqual([...ssh.hosts.keys()], ["web-01", "web-02", "db-01"]);
  assert.equal(planAdoption("cfg", ssh).hosts[0]!.host, "x");
  const list = readInventory("list", "web-01\n\n# db\ndb-01 # primary\n");
  assert.deepEqual([...list.hosts.keys()], ["web-01", "db-01"]);
});

test("__proto__ and constructor are names; nothing indexes a plain object by them", () => {
  const inventory = readInventory(
    "inv",
    "[__proto__]\nconstructor\n[__proto__:children]\ntoString\n[toString]\nhasOwnProperty\n",
  );
  const s = summary(inventory);
  assert.deepEqual(s.hosts.constructor, { host: undefined, ssh: {}, groups: ["__proto__"] });
  assert.deepEqual(planAdoption("inv", inventory).groups.get("toString"), ["__proto__"]);
  const yaml = readInventory(
    "inv",
    "all:\n  children:\n    __proto__:\n      hosts:\n        constructor:\n",
  );
  assert.deepEqual(planAdoption("inv", yaml).hosts[0]!.groups, ["__proto__"]);
});

test("refused input names its file and line: ssh options, bad values, broken sections, cycles", () => {
  const refused = (text: string) => {
    try {
      planAdoption("inv", readInventory("inv", text));
    } catch (error) {
      assert.ok(error instanceof InventoryErrors);
      return error.message;
    }
    assert.fail("accepted");
  };
  assert.match(
    refused("[web]\nweb-01\n-oProxyCommand=id\n"),
    /^inv:3: host name "-oProxyCommand=id" starts with "-"/,
  );
  assert.match(refused("-oProxyCommand=id\n"), /^inv:1: host name/);
  assert.match(
    refused("all:\n  hosts:\n    '-F/tmp/x':\n"),
    /^inv:3: host name "-F\/tmp\/x" starts with "-"/,
  );
  assert.match(
    refused("[web]\nweb-01 ansible_port=99999\n"),
    /^inv:2: host web-01: ansible_port "99999" is no port/,
  );
  assert.match(
    refused("[web]\nweb-01 ansible_user=-oX\n"),
    /^inv:2: host web-01: ansible_user: value "-oX" starts with "-"/,
  );
  assert.match(refused("[web]\nweb-01\n[db\n"), /^inv:3: a section header/);
  assert.match(refused("[a:children]\nb\n[b:children]\na\n"), /children cycle/);
  assert.match(refused("[web]\nweb-01 'unclosed\n"), /^inv:2: unclosed ' quote/);
  assert.match(refused("all:\n  hosts: [a, b]\n"), /^inv:2: hosts must be a mapping/);
  assert.match(refused("{ not json"), /^inv:1:/);
});

test("host ranges expand as Ansible's do, and a huge one is refused", () => {
  assert.deepEqual(expandHostPattern("web[01:03].x"), ["web01.x", "web02.x", "web03.x"]);
  assert.deepEqual(expandHostPattern("db-[a:c]"), ["db-a", "db-b", "db-c"]);
  assert.deepEqual(expandHostPattern("r[1:2]c[1:2]"), ["r1c1", "r1c2", "r2c1", "r2c2"]);
  assert.match((expandHostPattern("h[0:99999999]") as { error: string }).error, /more than 100000/);
  assert.match((expandHostPattern("h[9:1]") as { error: string }).error, /backwards/);
});

test("100,000 hosts are read, and a long chain of children does not exhaust the stack", () => {
  const names = Array.from({ length: 100_000 }, (_, i) => `host-${i}`);
  assert.equal(readInventory("list", names.join("\n")).hosts.size, 100_000);
  const chain = Array.from({ length: 50_000 }, (_, i) => `[g${i}:children]\ng${i + 1}\n`).join("");
  const inventory = readInventory("inv", `${chain}[g50000]\nleaf\n`);
  assert.equal(planAdoption("inv", inventory).hosts[0]!.groups.length, 1);
});

test("Ansible's refusals name file:line and the construct; a templated variable is left out and counted", () => {
  assert.throws(
    () => readInventory("inv", "[web]\nw1\n\n[db:vars]\nansible_user=pg\n"),
    /inv:4: section \[db:vars\] is for a group never defined$/,
  );
  assert.throws(
    () => readInventory("inv", "[prod:children]\nweb\n"),
    /inv:2: section \[prod:children\] names group "web", never defined$/,
  );
  assert.throws(
    () => readInventory("inv", "all:\n  hosts:\n    1234:\n"),
    /inv:3: host name 1234 is a YAML number/,
  );
  const plan = planAdoption(
    "inv",
    readInventory("inv", `[web]\nw1 ansible_host="{{ lookup('env', 'A') }}" ansible_user=deploy\n`),
  );
  assert.equal(plan.hosts[0]!.host, undefined);
  assert.equal(plan.hosts[0]!.ssh.user, "deploy");
  assert.deepEqual([...plan.templated], [["ansible_host", 1]]);
});

test("ssh_config: hosts of included files, resolved as ssh does; a bad line names its own file", () => {
  const files = new Map([
    ["/home/op/.ssh/conf.d/a.conf", "Host db-01\n  HostName 10.0.0.7\n  Port 2222\n"],
    ["/home/op/.ssh/conf.d/b.conf", "Host db-01 web-01\n  HostName ignored\n  User app\n"],
  ]);
  const source = {
    home: "/home/op",
    glob: (pattern: string) =>
      pattern === "/home/op/.ssh/conf.d/*.conf" ? [...files.keys()].sort() : [],
    read: (file: string) => files.get(file)!,
  };
  const text =
    "Include conf.d/*.conf\nHost web-01\n  ProxyJump ops@bastion:2200\n  IdentityFile ~/.ssh/fleet\nHost *\n  User fallback\n";
  const plan = planAdoption("cfg", readInventory("cfg", text, source));
  assert.deepEqual(
    plan.hosts.map((h) => [h.name, h.host, h.ssh]),
    [
      ["db-01", "10.0.0.7", { port: 2222, user: "app" }],
      ["web-01", "ignored", { user: "app", proxy_jump: "ops@bastion:2200" }],
    ],
  );
  files.set("/home/op/.ssh/conf.d/b.conf", "Host web-01\n  Port 99999\n");
  assert.throws(
    () => readInventory("cfg", text, source),
    (error: Error) =>
      error instanceof InventoryErrors &&
      /^\/home\/op\/\.ssh\/conf\.d\/b\.conf:2: host web-01: Port "99999" is no port/.test(
        error.message,
      ),
  );
  assert.throws(
    () => readInventory("cfg", "Host a\n  Match exec true\n", source),
    (error: Error) => /^cfg:2: host a: Match exec: not evaluated/.test(error.message),
  );
});

test("ssh arguments are read as ssh reads them: a -J inside a ProxyCommand is no jump host; a jump list and an ssh:// URI are jump hosts; what ssh refuses is refused with file:line", () => {
  const hosts = summary(
    readInventory(
      "inv",
      [
        "[db]",
        `db-01 ansible_ssh_common_args='-o ProxyCommand="ssh -J evil@x nc %h %p"'`,
        "db-02 ansible_ssh_common_args='-J ops@bastion-1:2200,ssh://bastion-2'",
        "",
      ].join("\n"),
    ),
  ).hosts;
  assert.deepEqual(hosts["db-01"]!.ssh, {});
  assert.deepEqual(hosts["db-02"]!.ssh, { proxy_jump: "ops@bastion-1:2200,bastion-2" });
  assert.throws(
    () =>
      planAdoption(
        "inv",
        readInventory("inv", "[db]\ndb-03 ansible_ssh_extra_args='-J h:99999'\n"),
      ),
    (error: unknown) =>
      error instanceof InventoryErrors &&
      /^inv:2: host db-03: ansible_ssh_extra_args ProxyJump "h:99999" has no port 1-65535/.test(
        error.message,
      ),
  );
});
