/**
 * The parts of the `vscode` API that the unit-tested modules touch, as small working fakes. Tests
 * read and set `stub` to see what the code did (status items, configuration values).
 */

export const stub = {
  config: {} as Record<string, unknown>,
  statusItems: [] as FakeStatusBarItem[],
  executed: [] as unknown[][],
  /** Notifications shown: [level, message, ...actions]; the answer to the next one is `choice`. */
  messages: [] as string[][],
  choice: undefined as string | undefined,
  statusMessages: [] as string[],
  /** `window.activeTextEditor`; set it with `setActiveEditor`. */
  activeTextEditor: undefined as FakeTextEditor | undefined,
  editorListeners: [] as ((editor: FakeTextEditor | undefined) => unknown)[],
  /**
   * Makes a document with this URI (a string such as `file:///a/b.py`) the active editor's, or none,
   * and fires `onDidChangeActiveTextEditor` as VS Code does.
   */
  setActiveEditor(uri: string | undefined, options: { isClosed?: boolean } = {}): FakeTextEditor | undefined {
    const editor = uri === undefined ? undefined : new FakeTextEditor(new FakeUri(uri), options.isClosed ?? false);
    stub.activeTextEditor = editor;
    for (const listener of [...stub.editorListeners]) listener(editor);
    return editor;
  },
  reset(): void {
    stub.config = {};
    stub.statusItems = [];
    stub.executed = [];
    stub.messages = [];
    stub.choice = undefined;
    stub.statusMessages = [];
    stub.activeTextEditor = undefined;
    stub.editorListeners = [];
  },
};

export class Disposable {
  constructor(private readonly onDispose: () => void = () => undefined) {}
  dispose(): void {
    this.onDispose();
  }
}

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationTokenSource {
  private readonly cancelled = new EventEmitter<void>();
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: this.cancelled.event,
  };
  cancel(): void {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this.cancelled.fire();
  }
  dispose(): void {
    this.cancelled.dispose();
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class FakeStatusBarItem {
  name = '';
  text = '';
  tooltip: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
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
    this.visible = false;
  }
}

/** A URI that prints as given; its scheme is what precedes the first colon. */
export class FakeUri {
  readonly scheme: string;
  constructor(private readonly value: string) {
    this.scheme = value.slice(0, Math.max(value.indexOf(':'), 0));
  }
  toString(): string {
    return this.value;
  }
}

export class FakeTextEditor {
  readonly document: { uri: FakeUri; isClosed: boolean };
  constructor(uri: FakeUri, isClosed: boolean) {
    this.document = { uri, isClosed };
  }
}

export const window = {
  get activeTextEditor(): FakeTextEditor | undefined {
    return stub.activeTextEditor;
  },
  onDidChangeActiveTextEditor(listener: (editor: FakeTextEditor | undefined) => unknown): Disposable {
    stub.editorListeners.push(listener);
    return new Disposable(() => {
      stub.editorListeners = stub.editorListeners.filter((l) => l !== listener);
    });
  },
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    stub.statusItems.push(item);
    return item;
  },
  async showWarningMessage(message: string, ...actions: string[]): Promise<string | undefined> {
    stub.messages.push(['warning', message, ...actions]);
    return stub.choice;
  },
  async showErrorMessage(message: string, ...actions: string[]): Promise<string | undefined> {
    stub.messages.push(['error', message, ...actions]);
    return stub.choice;
  },
  setStatusBarMessage(text: string): Disposable {
    stub.statusMessages.push(text);
    return new Disposable();
  },
};

export const workspace = {
  getConfiguration(section: string) {
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const value = stub.config[`${section}.${key}`];
        return (value === undefined ? fallback : value) as T | undefined;
      },
    };
  },
};

export const commands = {
  async executeCommand(...args: unknown[]): Promise<unknown> {
    stub.executed.push(args);
    return undefined;
  },
};
