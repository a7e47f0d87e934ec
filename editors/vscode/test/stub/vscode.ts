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
  /** The options (`{modal, detail}`) a message was shown with, by its index in `messages`. */
  messageOptions: new Map<number, MessageOptions>(),
  choice: undefined as string | undefined,
  statusMessages: [] as string[],
  /** `window.activeTextEditor`; set it with `setActiveEditor`. */
  activeTextEditor: undefined as FakeTextEditor | undefined,
  editorListeners: [] as ((editor: FakeTextEditor | undefined) => unknown)[],
  /** The options of each input box shown; the user's answer to the next one is `input` (undefined: Escape). */
  inputBoxes: [] as InputBoxOptions[],
  input: undefined as string | undefined,
  /** Each quick pick shown, with its items; `pick` chooses among them (the default: Escape). */
  quickPicks: [] as { items: unknown[]; options: Record<string, unknown> }[],
  pick: (() => undefined) as (items: unknown[]) => unknown,
  /** `workspace.workspaceFolders`, as URI strings; `asRelativePath` is relative to the first that holds the path. */
  folders: [] as string[],
  /** Documents opened with `showTextDocument`: the URI, the options, and the ranges revealed in its editor. */
  opened: [] as { uri: string; options: unknown; revealed: [Range, number][] }[],
  /**
   * Makes a document with this URI (a string such as `file:///a/b.py`) the active editor's, or none,
   * and fires `onDidChangeActiveTextEditor` as VS Code does. `text` and `selection` ([start, end]
   * offsets into it) are what `selection` and `document.getText` give.
   */
  setActiveEditor(
    uri: string | undefined,
    options: { isClosed?: boolean; text?: string; selection?: [number, number] } = {},
  ): FakeTextEditor | undefined {
    const editor =
      uri === undefined
        ? undefined
        : new FakeTextEditor(new FakeUri(uri), options.isClosed ?? false, options.text ?? '', options.selection);
    stub.activeTextEditor = editor;
    for (const listener of [...stub.editorListeners]) listener(editor);
    return editor;
  },
  reset(): void {
    stub.config = {};
    stub.statusItems = [];
    stub.executed = [];
    stub.messages = [];
    stub.messageOptions = new Map();
    stub.choice = undefined;
    stub.statusMessages = [];
    stub.activeTextEditor = undefined;
    stub.editorListeners = [];
    stub.inputBoxes = [];
    stub.input = undefined;
    stub.quickPicks = [];
    stub.pick = () => undefined;
    stub.folders = [];
    stub.opened = [];
  },
};

interface MessageOptions {
  modal?: boolean;
  detail?: string;
}

interface InputBoxOptions {
  title?: string;
  prompt?: string;
  value?: string;
  validateInput?(value: string): string | undefined;
}

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

export const Uri = {
  parse(value: string): FakeUri {
    return new FakeUri(value);
  },
};

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(start: Position, end: Position);
  constructor(startLine: number, startCharacter: number, endLine: number, endCharacter: number);
  constructor(...args: [Position, Position] | [number, number, number, number]) {
    if (args.length === 2) {
      [this.start, this.end] = args;
    } else {
      this.start = new Position(args[0], args[1]);
      this.end = new Position(args[2], args[3]);
    }
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

/** Positions in a one-line text are offsets: enough for a selection's text. */
export class FakeTextEditor {
  readonly document: { uri: FakeUri; isClosed: boolean; getText(range?: Range): string };
  readonly selection: Range;
  constructor(uri: FakeUri, isClosed: boolean, text = '', selection: [number, number] = [0, 0]) {
    this.document = {
      uri,
      isClosed,
      getText: (range?: Range) => (range ? text.slice(range.start.character, range.end.character) : text),
    };
    this.selection = new Range(0, selection[0], 0, selection[1]);
  }
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum TextEditorRevealType {
  Default = 0,
  InCenter = 1,
  InCenterIfOutsideViewport = 2,
  AtTop = 3,
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
  async showWarningMessage(message: string, ...rest: (string | MessageOptions)[]): Promise<string | undefined> {
    const actions = rest.filter((item): item is string => typeof item === 'string');
    const options = rest.find((item): item is MessageOptions => typeof item === 'object');
    if (options !== undefined) stub.messageOptions.set(stub.messages.length, options);
    stub.messages.push(['warning', message, ...actions]);
    return stub.choice;
  },
  async showErrorMessage(message: string, ...actions: string[]): Promise<string | undefined> {
    stub.messages.push(['error', message, ...actions]);
    return stub.choice;
  },
  async showInformationMessage(message: string, ...actions: string[]): Promise<string | undefined> {
    stub.messages.push(['info', message, ...actions]);
    return stub.choice;
  },
  async showInputBox(options: InputBoxOptions): Promise<string | undefined> {
    stub.inputBoxes.push(options);
    return stub.input;
  },
  async showQuickPick(items: unknown[], options: Record<string, unknown>): Promise<unknown> {
    stub.quickPicks.push({ items, options });
    return stub.pick(items);
  },
  async withProgress<T>(_options: unknown, task: (progress: unknown, token: unknown) => Promise<T>): Promise<T> {
    return task({ report: () => undefined }, new CancellationTokenSource().token);
  },
  async showTextDocument(uri: FakeUri, options: unknown) {
    const opened = { uri: uri.toString(), options, revealed: [] as [Range, number][] };
    stub.opened.push(opened);
    return {
      revealRange(range: Range, revealType: number): void {
        opened.revealed.push([range, revealType]);
      },
    };
  },
  setStatusBarMessage(text: string): Disposable {
    stub.statusMessages.push(text);
    return new Disposable();
  },
};

export const workspace = {
  get workspaceFolders() {
    return stub.folders.length > 0 ? stub.folders.map((uri, index) => ({ uri: new FakeUri(uri), index })) : undefined;
  },
  asRelativePath(uri: FakeUri): string {
    const path = uri.toString();
    const folder = stub.folders.find((f) => path.startsWith(`${f}/`));
    return folder !== undefined ? path.slice(folder.length + 1) : path;
  },
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
