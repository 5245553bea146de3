import { runProcess } from './processes';

runProcess('api');
