/**
 * The interpreter selected in the Python extension (ms-python.python), when it is installed. Only the few
 * members used here are typed, structurally, so that the tests pass plain objects and nothing breaks when the
 * extension is absent or its API changes shape.
 */

export const PYTHON_EXTENSION_ID = "ms-python.python";

export interface DisposableLike {
  dispose(): unknown;
}

type Listener = (listener: () => unknown) => DisposableLike;

export interface PythonApi {
  /** The current API (Python extension 2023 and later). */
  environments?: {
    getActiveEnvironmentPath(resource?: unknown): { path: string; id?: string } | undefined;
    resolveEnvironment(environment: { path: string; id?: string } | string): Promise<{ executable?: { uri?: { fsPath: string } } } | undefined>;
    onDidChangeActiveEnvironmentPath?: Listener;
  };
  /** The older, deprecated API, still present. */
  settings?: {
    getExecutionDetails?(resource?: unknown): { execCommand: string[] | undefined } | undefined;
    onDidChangeExecutionDetails?: Listener;
  };
}

export interface ExtensionLike {
  isActive: boolean;
  exports: unknown;
  activate(): PromiseLike<unknown>;
}

function withTimeout<T>(promise: PromiseLike<T>, ms: number): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    Promise.resolve(promise).then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(undefined);
      },
    );
  });
}

/** The Python extension's API, activating it if needed; undefined when it is missing, fails or hangs. */
export async function pythonApi(extension: ExtensionLike | undefined, timeoutMs = 10_000): Promise<PythonApi | undefined> {
  if (extension === undefined) {
    return undefined;
  }
  const exports = extension.isActive ? extension.exports : await withTimeout(extension.activate(), timeoutMs);
  return typeof exports === "object" && exports !== null ? (exports as PythonApi) : undefined;
}

/** The selected interpreter as an argv, e.g. `["/work/.venv/bin/python"]`, or undefined. */
export async function selectedInterpreter(api: PythonApi | undefined, resource?: unknown): Promise<string[] | undefined> {
  if (api === undefined) {
    return undefined;
  }
  try {
    const environments = api.environments;
    if (environments !== undefined) {
      const active = environments.getActiveEnvironmentPath(resource);
      if (active !== undefined) {
        const resolved = await environments.resolveEnvironment(active);
        const executable = resolved?.executable?.uri?.fsPath;
        if (executable) {
          return [executable];
        }
      }
    }
  } catch {
    // fall through to the older API
  }
  try {
    const command = api.settings?.getExecutionDetails?.(resource)?.execCommand;
    if (Array.isArray(command) && command.length > 0 && command.every((part) => typeof part === "string") && command[0] !== "") {
      return [...command];
    }
  } catch {
    // no interpreter from the Python extension
  }
  return undefined;
}

/** Subscribe to interpreter changes in whichever API is present. */
export function onInterpreterChange(api: PythonApi | undefined, listener: () => unknown): DisposableLike | undefined {
  try {
    const subscribe = api?.environments?.onDidChangeActiveEnvironmentPath ?? api?.settings?.onDidChangeExecutionDetails;
    return subscribe === undefined ? undefined : subscribe(listener);
  } catch {
    return undefined;
  }
}
