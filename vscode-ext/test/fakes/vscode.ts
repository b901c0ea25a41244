/**
 * A hand-written fake of the few `vscode` APIs the extension uses. VS Code cannot be downloaded where these
 * tests run, so `register.ts` makes `require("vscode")` return this module. Every call is recorded in
 * `fake` for the tests to inspect; `fake.reset()` starts over.
 */

export interface Disposable {
  dispose(): void;
}

export class EventEmitter<T> {
  private listeners: Array<(value: T) => unknown> = [];

  readonly event = (listener: (value: T) => unknown): Disposable => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((other) => other !== listener)) };
  };

  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      listener(value);
    }
  }

  get size(): number {
    return this.listeners.length;
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}

  static file(fsPath: string): Uri {
    return new Uri("file", fsPath);
  }
}

export interface Message {
  kind: "error" | "warning" | "information";
  message: string;
  items: string[];
}

export class FakeOutputChannel {
  lines: string[] = [];
  text = "";
  shown = 0;
  disposed = false;

  constructor(readonly name: string) {}
  append(value: string): void {
    this.text += value;
  }
  appendLine(value: string): void {
    this.lines.push(value);
    this.text += `${value}\n`;
  }
  replace(value: string): void {
    this.text = value;
  }
  clear(): void {
    this.text = "";
  }
  show(): void {
    this.shown += 1;
  }
  hide(): void {}
  dispose(): void {
    this.disposed = true;
  }
}

export class FakeStatusBarItem {
  text = "";
  tooltip: string | undefined;
  command: unknown;
  backgroundColor: ThemeColor | undefined;
  name: string | undefined;
  visible = false;
  disposed = false;

  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
  }
}

export class FakeFileSystemWatcher {
  disposed = false;
  readonly onDidCreate = new EventEmitter<Uri>().event;
  readonly onDidChange = new EventEmitter<Uri>().event;
  readonly onDidDelete = new EventEmitter<Uri>().event;

  constructor(readonly glob: string) {}
  dispose(): void {
    this.disposed = true;
  }
}

class FakeState {
  /** Settings by full key, e.g. `"cachelint.path"`. */
  configuration: Record<string, unknown> = {};
  commands = new Map<string, (...args: unknown[]) => unknown>();
  executed: Array<{ command: string; args: unknown[] }> = [];
  messages: Message[] = [];
  /** What the user clicks on the next notification (an item title), or undefined to dismiss it. */
  answer: ((message: Message) => string | undefined) | undefined;
  outputChannels: FakeOutputChannel[] = [];
  statusItems: FakeStatusBarItem[] = [];
  watchers: FakeFileSystemWatcher[] = [];
  extensions = new Map<string, unknown>();
  workspaceFolders: Array<{ uri: Uri; name: string; index: number }> | undefined;
  readonly configurationChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
  readonly trustGranted = new EventEmitter<void>();

  reset(): void {
    Object.assign(this, new FakeState());
  }

  /** Fire `onDidChangeConfiguration` for these changed keys (e.g. `"cachelint.path"`, `"python.analysis"`). */
  changeConfiguration(keys: string[]): void {
    this.configurationChanged.fire({
      affectsConfiguration: (section: string) => keys.some((key) => key === section || key.startsWith(`${section}.`)),
    });
  }
}

export const fake = new FakeState();

function message(kind: Message["kind"]) {
  return (text: string, ...items: string[]): Promise<string | undefined> => {
    const shown: Message = { kind, message: text, items };
    fake.messages.push(shown);
    return Promise.resolve(fake.answer?.(shown));
  };
}

export const window = {
  createOutputChannel(name: string): FakeOutputChannel {
    const channel = new FakeOutputChannel(name);
    fake.outputChannels.push(channel);
    return channel;
  },
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    fake.statusItems.push(item);
    return item;
  },
  showErrorMessage: message("error"),
  showWarningMessage: message("warning"),
  showInformationMessage: message("information"),
};

export const commands = {
  registerCommand(command: string, callback: (...args: unknown[]) => unknown): Disposable {
    fake.commands.set(command, callback);
    return { dispose: () => fake.commands.delete(command) };
  },
  executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    fake.executed.push({ command, args });
    const callback = fake.commands.get(command);
    return Promise.resolve(callback?.(...args));
  },
};

export const workspace = {
  getConfiguration(section: string) {
    return {
      get<T>(key: string, defaultValue?: T): T | undefined {
        const full = `${section}.${key}`;
        return full in fake.configuration ? (fake.configuration[full] as T) : defaultValue;
      },
    };
  },
  get workspaceFolders() {
    return fake.workspaceFolders;
  },
  onDidChangeConfiguration: (listener: (event: { affectsConfiguration(section: string): boolean }) => unknown) =>
    fake.configurationChanged.event(listener),
  onDidGrantWorkspaceTrust: (listener: () => unknown) => fake.trustGranted.event(listener),
  createFileSystemWatcher(glob: string): FakeFileSystemWatcher {
    const watcher = new FakeFileSystemWatcher(glob);
    fake.watchers.push(watcher);
    return watcher;
  },
};

export const extensions = {
  getExtension(id: string): unknown {
    return fake.extensions.get(id);
  },
};
